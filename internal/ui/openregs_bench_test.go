package ui

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// benchYear is a compacted store of a year of synthetic results
// ($BENCHFLEET_BENCH_RESULTS of them, default 50,000, index.WriteSynth:
// 8 models on 6 pools, 2 formats, 5 batch sizes) ending now.
func benchYear(b *testing.B) *file.Bucket {
	b.Helper()
	n := 50_000
	if v := os.Getenv("BENCHFLEET_BENCH_RESULTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	fb, err := file.NewBucket(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := index.WriteSynth(b.Context(), fb, index.SynthOptions{Results: n, Days: 365}); err != nil {
		b.Fatal(err)
	}
	if _, err := index.Compact(b.Context(), fb, index.CompactOptions{}); err != nil {
		b.Fatal(err)
	}
	return fb
}

// BenchmarkFleetOpen measures what the home page's open regressions cost
// over a year of results: making the list (the last 90 days read through
// the index, every series cut into segments; done in the background once
// a minute at most) and a page's read of it while it is fresh or being
// made again (what every load of the page pays).
func BenchmarkFleetOpen(b *testing.B) {
	fb := benchYear(b)
	cfg, err := gate.GateConfig{}.WithDefaults()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("making", func(b *testing.B) {
		for b.Loop() {
			l, err := fleetOpen(b.Context(), fb, cfg, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(l.Open)+len(l.Accepted)), "regressions")
		}
	})
	b.Run("page", func(b *testing.B) {
		s := &Server{cfg: Config{Store: fb, Gate: cfg}}
		if _, _, err := s.openRegressions(b.Context(), time.Now()); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			// Past the list's TTL every tenth time: the page gets the last
			// list while a new one is made.
			now := time.Now()
			if i++; i%10 == 0 {
				now = now.Add(2 * openTTL)
			}
			if l, _, err := s.openRegressions(b.Context(), now); err != nil || l == nil {
				b.Fatalf("list %v: %v", l, err)
			}
		}
	})
}
