package bench

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// `bench dispatch` measures each round's raw and fleet rates and their
// ratio, the spread of the rounds, and the claim latency; with a job
// duration the rounds' utilization and the runner alone. Every job must
// have run (the bench waits for every result). No wall-clock assertions:
// the report's shape and that its figures are positive.
func TestRunDispatch(t *testing.T) {
	t.Parallel()
	t.Run("raw comparison", func(t *testing.T) {
		t.Parallel()
		var progress strings.Builder
		rep, err := RunDispatch(t.Context(), DispatchConfig{Jobs: 60, Slots: 3, Rounds: 2, Probes: 3, Progress: &progress})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Raw) != 2 || len(rep.Utilization) != 0 {
			t.Fatalf("%d raw rounds, %d utilization rounds; want 2, 0", len(rep.Raw), len(rep.Utilization))
		}
		for i, r := range rep.Raw {
			if r.Raw <= 0 || r.Fleet <= 0 || !(r.Ratio > 0) || r.Ratio != r.FleetRate/r.RawRate {
				t.Errorf("round %d: %+v", i+1, r)
			}
		}
		spreadWithin(t, rep.Spread, rep.Raw[0].Ratio, rep.Raw[1].Ratio)
		if len(rep.ClaimLatency) != 3 || !slices.IsSorted(rep.ClaimLatency) || rep.ClaimLatency[0] <= 0 {
			t.Errorf("claim latency %v: want 3 positive, sorted", rep.ClaimLatency)
		}
		var out strings.Builder
		rep.Print(&out)
		num := `[0-9]+(\.[0-9]+)?`
		for _, re := range []string{
			`(?m)^round 1  raw jetstream +60 msgs +` + num + `s +` + num + ` msgs/s$`,
			`(?m)^round 2  benchfleet +60 jobs +` + num + `s +` + num + ` jobs/s$`,
			`(?m)^round 2  ratio fleet/raw rate ` + num + ` \(time ` + num + `x\)`,
			`(?m)^ratio fleet/raw rate ` + num + ` \(median of 2 rounds; min ` + num + `, max ` + num + `\)$`,
			`(?m)^claim latency \(idle slots, 3 jobs one at a time\): p50 ` + num + ` ms`,
		} {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				t.Errorf("output does not match %s:\n%s", re, out.String())
			}
		}
		if !strings.Contains(progress.String(), "round 2/2: benchfleet, 60 jobs on 3 slots") {
			t.Errorf("no progress:\n%s", progress.String())
		}
	})
	t.Run("utilization", func(t *testing.T) {
		t.Parallel()
		rep, err := RunDispatch(t.Context(), DispatchConfig{Jobs: 12, Slots: 3, JobDuration: 20 * time.Millisecond, Rounds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Utilization) != 2 || len(rep.Raw) != 0 || len(rep.ClaimLatency) != 0 {
			t.Fatalf("%d utilization rounds, %d raw, %d probes; want 2, 0, 0", len(rep.Utilization), len(rep.Raw), len(rep.ClaimLatency))
		}
		for i, u := range rep.Utilization {
			// 12 jobs of 20ms on 3 slots: 80ms of runner time per slot.
			if u.Ideal != 80*time.Millisecond || !(u.Utilization > 0) || !(u.AloneUtilization > 0) || u.Last <= 0 || u.Seen < u.Last {
				t.Errorf("round %d: %+v", i+1, u)
			}
			if len(u.Slots.Spans) != 12 || len(u.Slots.Gaps) != 12-3 {
				t.Errorf("round %d: %d spans, %d gaps; want 12 spans and a gap between each two jobs of a slot", i+1, len(u.Slots.Spans), len(u.Slots.Gaps))
			}
		}
		spreadWithin(t, rep.Spread, rep.Utilization[0].Utilization, rep.Utilization[1].Utilization)
		var out strings.Builder
		rep.Print(&out)
		for _, re := range []string{`(?m)^round 1  utilization [0-9.]+ \(runner busy time`, `(?m)^round 2  slot times  first start [0-9.]+ ms`, `(?m)^utilization [0-9.]+ \(median of 2 rounds`} {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				t.Errorf("output does not match %s:\n%s", re, out.String())
			}
		}
		if strings.Contains(out.String(), "claim latency") {
			t.Errorf("no probes, but a claim latency:\n%s", out.String())
		}
	})
}

// spreadWithin checks the spread of two rounds: the mean of both, between
// them.
func spreadWithin(t *testing.T, s Spread, a, b float64) {
	t.Helper()
	if s.Min != min(a, b) || s.Max != max(a, b) || math.Abs(s.Median-(a+b)/2) > 1e-9 {
		t.Errorf("spread %+v of %v and %v", s, a, b)
	}
}
