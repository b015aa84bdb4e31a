package cli_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/bench"
)

// `bench dispatch --box` runs every job plain and boxed and prints each
// side of each round, the round's ratio and the median; as root the boxed
// side runs as nobody, otherwise the output says no user switch was
// possible. It runs as the real binary: its plain side makes the process
// a child subreaper, which this test binary must not become. No
// wall-clock assertions: the shape of the output and positive figures.
func TestBenchDispatchBox(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(bench.DefaultPython); err != nil {
		msg := "bench dispatch --box needs " + bench.DefaultPython + ": " + err.Error()
		if os.Getenv("BENCHFLEET_REQUIRE_PYTEST") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.CommandContext(t.Context(), benchfleetBinary(t), "bench", "dispatch", "--box",
		"--jobs", "6", "--slots", "2", "--job-duration", "20ms", "--rounds", "1")
	cmd.WaitDelay = 5 * time.Second
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	num := `[0-9]+(\.[0-9]+)?`
	for _, re := range []string{
		`(?m)^box: boxed jobs run as .+, (a cgroup per job|the worker as subreaper .*); walls: .*; plain jobs without a sandbox`,
		`(?m)^sandbox start per job: p50 ` + num + ` ms warm, ` + num + ` ms cold \(.*\) against /bin/true alone p50 ` + num + ` ms, 40 runs each$`,
		`(?m)^round 1  plain  6 jobs of 20ms on 2 slots +` + num + `s +` + num + ` jobs/s  attempt mean ` + num + ` ms$`,
		`(?m)^round 1  boxed  6 jobs of 20ms on 2 slots +` + num + `s +` + num + ` jobs/s  attempt mean ` + num + ` ms$`,
		`(?m)^round 1  ratio boxed/plain time ` + num + `, box cost -?` + num + ` ms/job per slot`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output does not match %s:\n%s", re, out.String())
		}
	}
	m := regexp.MustCompile(`(?m)^ratio boxed/plain time (` + num + `) \(median of 1 rounds; min ` + num + `, max ` + num + `\)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no median line:\n%s", out.String())
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
		t.Errorf("median ratio %q: want a positive number", m[1])
	}
	root := os.Geteuid() == 0
	if ownUID := strings.Contains(out.String(), "boxed jobs run as a uid of its own per job"); ownUID != root {
		t.Errorf("root %v, but boxed jobs as a uid of their own %v:\n%s", root, ownUID, out.String())
	}
	if noted := strings.Contains(out.String(), "box: not root: jobs cannot switch users"); noted == root {
		t.Errorf("root %v, but the not-root note printed %v:\n%s", root, noted, out.String())
	}
	if !strings.Contains(errOut.String(), "round 1/1: boxed, 6 jobs of 20ms on 2 slots") {
		t.Errorf("no progress on stderr:\n%s", errOut.String())
	}
}

// --box refuses what does not apply to it, naming the flag.
func TestBenchDispatchBoxUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{"--probes 3", "--probes"},
		{"--job-duration 0", "--job-duration 0"},
		{"--jobs 200000", "jobs 200000"},
	} {
		args := append([]string{"bench", "dispatch", "--box"}, strings.Fields(tc.args)...)
		if code, _, errOut := run(t, args...); code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, %q; want a usage error naming %s", tc.args, code, errOut, tc.want)
		}
	}
}
