package natsconn

import "testing"

func TestRightsMayPublish(t *testing.T) {
	producer := Rights{Known: true, User: "producer",
		allow: []string{"$JS.API.STREAM.INFO.*", "bench.jobs.>", "$KV.bench-runs.>", "$JS.API.STREAM.MSG.DELETE.BENCH_DEAD"},
		deny:  []string{"$JS.API.STREAM.MSG.DELETE.BENCH_JOBS", "bench.events.*.*.>"}}
	for _, c := range []struct {
		r       Rights
		subject string
		want    bool
	}{
		{producer, "$JS.API.STREAM.INFO.BENCH_JOBS", true},
		{producer, "$JS.API.STREAM.INFO.BENCH_JOBS.x", false},
		{producer, "bench.jobs.n150.high", true},
		{producer, "bench.jobs", false},
		{producer, "$KV.bench-runs.r1.cancel", true},
		{producer, "$JS.API.STREAM.MSG.DELETE.BENCH_DEAD", true},
		{producer, "$JS.API.STREAM.MSG.DELETE.BENCH_JOBS", false},
		{producer, "$KV.bench-health.w1.d0", false},
		{Rights{Known: true, deny: []string{"bench.>"}}, "bench.jobs.sim.low", false},
		{Rights{Known: true, deny: []string{"bench.>"}}, "other", true}, // no allow list: all but the denied
		{Rights{}, "$JS.API.STREAM.MSG.DELETE.BENCH_JOBS", true},        // unknown: try
	} {
		if got := c.r.MayPublish(c.subject); got != c.want {
			t.Errorf("%s MayPublish(%q) = %v, want %v", c.r.User, c.subject, got, c.want)
		}
	}
}
