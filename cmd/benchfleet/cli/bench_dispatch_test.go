package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// `bench dispatch` prints each round's raw and fleet rates and their ratio,
// the median of the rounds, and the claim latency; with --job-duration the
// rounds' utilization and the runner alone. Every job must have run (the
// bench waits for every result). No wall-clock assertions: only the shape
// of the output and that the figures are positive.
func TestBenchDispatch(t *testing.T) {
	t.Parallel()
	num := `[0-9]+(\.[0-9]+)?`
	positive := func(t *testing.T, out, re string) {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("output does not match %s:\n%s", re, out)
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
			t.Errorf("%q: want a positive number", m[1])
		}
	}
	t.Run("raw comparison", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := ciRun(t, "bench", "dispatch", "--jobs", "60", "--slots", "3", "--rounds", "2", "--probes", "3")
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, re := range []string{
			`(?m)^round 1  raw jetstream +60 msgs +` + num + `s +` + num + ` msgs/s$`,
			`(?m)^round 2  benchfleet +60 jobs +` + num + `s +` + num + ` jobs/s$`,
			`(?m)^round 2  ratio fleet/raw rate ` + num + ` \(time ` + num + `x\)`,
			`(?m)^claim latency \(idle slots, 3 jobs one at a time\): p50 ` + num + ` ms`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("output does not match %s:\n%s", re, out)
			}
		}
		positive(t, out, `(?m)^ratio fleet/raw rate (`+num+`) \(median of 2 rounds; min `+num+`, max `+num+`\)$`)
		if !strings.Contains(errOut, "round 2/2: benchfleet, 60 jobs on 3 slots") {
			t.Errorf("no progress on stderr:\n%s", errOut)
		}
	})
	t.Run("utilization", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := ciRun(t, "bench", "dispatch", "--jobs", "12", "--slots", "3", "--job-duration", "20ms", "--rounds", "2", "--probes", "0")
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, re := range []string{
			`(?m)^round 1  utilization ` + num + ` \(runner busy time`,
			`(?m)^round 2  slot times  first start ` + num + ` ms`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("output does not match %s:\n%s", re, out)
			}
		}
		positive(t, out, `(?m)^utilization (`+num+`) \(median of 2 rounds; min `+num+`, max `+num+`\)$`)
		if strings.Contains(out, "claim latency") {
			t.Errorf("--probes 0 measured the claim latency:\n%s", out)
		}
	})
	t.Run("bad rounds", func(t *testing.T) {
		t.Parallel()
		if code, _, errOut := ciRun(t, "bench", "dispatch", "--rounds", "0"); code != ExitUsage || !strings.Contains(errOut, "--rounds 0") {
			t.Fatalf("--rounds 0: exit %d, %q; want a usage error naming --rounds", code, errOut)
		}
	})
}

// bench query names the flag it refuses.
func TestBenchQueryNamesTheBadFlag(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--results", "--days", "--repeat"} {
		code, _, errOut := ciRun(t, "bench", "query", flag, "0")
		if code != ExitUsage || !strings.Contains(errOut, flag+" 0: must be at least 1") {
			t.Errorf("%s 0: exit %d, %q; want a usage error naming %s", flag, code, errOut, flag)
		}
	}
}
