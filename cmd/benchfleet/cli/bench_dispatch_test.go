package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// `bench dispatch` runs its flags' bench and prints the report (what it
// measures is tested in internal/bench).
func TestBenchDispatch(t *testing.T) {
	t.Parallel()
	code, out, errOut := ciRun(t, "bench", "dispatch", "--jobs", "20", "--slots", "2", "--rounds", "1", "--probes", "1")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, re := range []string{
		`(?m)^round 1  raw jetstream +20 msgs `,
		`(?m)^ratio fleet/raw rate [0-9.]+ \(median of 1 rounds; min [0-9.]+, max [0-9.]+\)$`,
		`(?m)^claim latency \(idle slots, 1 jobs one at a time\): p50 `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
	if !strings.Contains(errOut, "round 1/1: benchfleet, 20 jobs on 2 slots") {
		t.Errorf("no progress on stderr:\n%s", errOut)
	}
}

// Every bench refuses a bad flag with a usage error naming it, before it
// measures anything.
func TestBenchUsage(t *testing.T) {
	t.Parallel()
	used := t.TempDir()
	if err := os.Mkdir(used+"/nats", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"dispatch --rounds 0", "--rounds 0: want 1..100"},
		{"dispatch --jobs 0", "--jobs 0: want 1..1000000"},
		{"query --results 0", "--results 0: must be at least 1"},
		{"query --days 0", "--days 0: must be at least 1"},
		{"query --repeat 0", "--repeat 0: must be at least 1"},
		{"query --format xml", `--format "xml"`},
		{"submit --jobs 0", "--jobs 0: want 1.."},
		{"submit --jobs 10 --data " + used, "--data " + used + ": already holds a server's data"},
		{"worker-cpu --job-duration 10ms", "--job-duration 10ms: want 1s..1h"},
		{"builds --rounds 21", "--rounds 21: want 1..20"},
		{"chaos --workers 0", "workers 0: must be between 1 and 64"},
	} {
		code, _, errOut := ciRun(t, append([]string{"bench"}, strings.Fields(tc.args)...)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("bench %s: exit %d, %q; want %d naming %s", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
}

// Every bench has its long help.
func TestBenchHelp(t *testing.T) {
	t.Parallel()
	a := &app{}
	for _, c := range a.benchCmd().Commands() {
		if len(c.Long) < 100 {
			t.Errorf("bench %s: long help %q", c.Name(), c.Long)
		}
	}
}
