package protocol

import (
	"slices"
	"testing"
)

func TestQueues(t *testing.T) {
	t.Parallel()
	got := PoolQueues("sim")
	want := []Queue{{Pool: "sim", Priority: PriorityHigh}, {Pool: "sim", Priority: PriorityNormal},
		{Trust: TrustUntrusted, Pool: "sim", Priority: PriorityNormal}, {Pool: "sim", Priority: PriorityLow},
		{Trust: TrustUntrusted, Pool: "sim", Priority: PriorityLow}}
	if !slices.Equal(got, want) {
		t.Fatalf("PoolQueues(sim) = %v, want %v", got, want)
	}
	names := map[string]bool{}
	for _, q := range AllQueues() {
		back, err := ParseQueue(q.Subject())
		if err != nil || back != q {
			t.Errorf("ParseQueue(%s) = %v, %v; want %v", q.Subject(), back, err, q)
		}
		if names[q.Consumer()] {
			t.Errorf("consumer %s twice", q.Consumer())
		}
		names[q.Consumer()] = true
	}
	for _, c := range []struct {
		subject, stream, consumer string
		trust                     Trust
	}{
		{"bench.jobs.n150.high", StreamJobs, "jobs-n150-high", TrustTrusted},
		{"bench.untrusted.n150.low", StreamUntrusted, "untrusted-n150-low", TrustUntrusted},
	} {
		q, err := ParseQueue(c.subject)
		if err != nil || q.Stream() != c.stream || q.Consumer() != c.consumer || q.Trust != c.trust {
			t.Errorf("%s: %+v %v", c.subject, q, err)
		}
	}
	for _, bad := range []string{"bench.jobs.n150", "bench.events.a.b", "bench.untrusted.n150.low.x", ""} {
		if _, err := ParseQueue(bad); err == nil {
			t.Errorf("ParseQueue(%q) accepted", bad)
		}
	}
	if QueueOf("untrusted-pr-1", "sim", PriorityNormal).Stream() != StreamUntrusted || QueueOf("ci-1", "sim", PriorityNormal).Stream() != StreamJobs {
		t.Error("QueueOf does not route by the run's trust")
	}
}

func TestResultUntrusted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    Result
		want bool
	}{
		{Result{Run: "ci-1"}, false},
		{Result{Run: "ci-1", Trust: TrustUntrusted}, true},
		{Result{Run: "ci-1", Trust: "something-new"}, true},
		{Result{Run: "untrusted-pr-1"}, true},
	} {
		if got := c.r.Untrusted(); got != c.want {
			t.Errorf("%+v: Untrusted %v, want %v", c.r, got, c.want)
		}
	}
}
