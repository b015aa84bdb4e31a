package gate

import (
	"testing"

	"github.com/benchfleet/benchfleet/producer/gate/gatetest"
)

// Cutting a series of SegmentHorizon runs with a step in it: what each
// judged job of a run costs when its series has a long history.
func BenchmarkSegmentHorizon(b *testing.B) {
	c, _ := GateConfig{}.WithDefaults()
	h := append(gatetest.Around(1000, 0.02, SegmentHorizon/2), gatetest.Around(700, 0.02, SegmentHorizon/2)...)
	b.ReportAllocs()
	for b.Loop() {
		g := c.Segment(h)
		if len(g.Segments) < 2 {
			b.Fatal("no step found")
		}
	}
}
