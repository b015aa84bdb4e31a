package sim

import (
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// A confirmation repeat reports sim.repeat_samples_per_sec; the original
// reports sim.samples_per_sec, and its labels are not changed.
func TestRepeatReportsItsOwnRate(t *testing.T) {
	t.Parallel()
	labels := map[string]string{LabelSamplesPerSec: "900", LabelRepeatSamplesPerSec: "1000"}
	for _, tc := range []struct {
		repeat int
		want   float64
	}{{0, 900}, {1, 1000}, {2, 1000}} {
		p, err := parse(labelsOf(&protocol.Job{Repeat: tc.repeat, Labels: labels}))
		if err != nil || p.rate != tc.want {
			t.Errorf("repeat %d: rate %v (%v), want %v", tc.repeat, p.rate, err, tc.want)
		}
	}
	if labels[LabelSamplesPerSec] != "900" {
		t.Error("the job's labels were changed")
	}
	if _, err := parse(labelsOf(&protocol.Job{Repeat: 1, Labels: map[string]string{LabelRepeatSamplesPerSec: "fast"}})); err == nil {
		t.Error("a bad repeat rate is not an error")
	}
}
