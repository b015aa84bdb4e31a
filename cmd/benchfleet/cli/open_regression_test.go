package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// A regression stays a regression. Eight runs of main at 1000 samples/sec,
// then a commit at 700 trips the gate (exit 2, its two confirmation
// repeats reproduce it, so the step is confirmed). Two more commits at 700
// pass their own gate (they caused nothing new), while the gate's table
// and JSON list the open regression since the 700 commit. A commit at 500
// after them trips it again, judged against 700. Accepting the first step
// lists it as accepted with its reason, and the level it accepted still
// judges: the next commit at 500 passes, one at 450 (10% below) fails.
func TestARegressionStaysARegression(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 2)
	plantHistory(t, f.store, "main", "simnet-a", "main", 1000, noise1pct[:8], protocol.StatusPassed)
	dir := t.TempDir()
	commit := func(i int) string { return fmt.Sprintf("c%02d%037x", i, 0xabc) }
	submit := func(i int, rate string) (int, string, string) {
		t.Helper()
		matrix := filepath.Join(dir, fmt.Sprintf("matrix-%d.yaml", i))
		m := strings.Replace(ciMatrix, `"900"`, `"`+rate+`"`, 1)
		m = strings.Replace(m, "    - {model: simnet-b}\n    - {model: simnet-new}\n", "", 1)
		if err := os.WriteFile(matrix, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return ciRun(t, f.args("submit", "--matrix", matrix, "--commit", commit(i), "--branch", "main", "--repo", "acme/bench",
			"--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s", "--gate")...)
	}
	expect := func(i int, rate string, want int, says ...string) string {
		t.Helper()
		code, out, errOut := submit(i, rate)
		if code != want {
			t.Fatalf("commit %d at %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", i, rate, code, want, out, errOut)
		}
		for _, s := range says {
			if !strings.Contains(out, s) {
				t.Errorf("commit %d at %s: the output does not say %q:\n%s", i, rate, s, out)
			}
		}
		return out
	}
	short := func(c string) string { return c[:12] }

	expect(1, "700", ExitGate, "gate REGRESSION: 1 regression(s)")
	for i := 2; i <= 3; i++ {
		expect(i, "700", ExitOK, "gate PASS: 0 regression(s)", "simnet-a/sim/bs4/bfloat16: open regression since "+short(commit(1)))
	}
	// The gate's JSON of the third commit's run names the step's commit
	// and the bisect between the last good commit and it.
	code, out, errOut := ciRun(t, "results", "gate", "--run", runOf(t, expect(30, "700", ExitOK)), "--store", f.storeURL, "--format", "json")
	if code != ExitOK {
		t.Fatalf("results gate: exit %d\n%s\n%s", code, out, errOut)
	}
	var rows []gate.GateRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("results gate --format json: %v\n%s", err, out)
	}
	open := rows[0].OpenRegressions
	if rows[0].Verdict != gate.VerdictOK || len(open) != 1 || open[0].Since != commit(1) || open[0].LastGood != fmt.Sprintf("%040d", 7) ||
		!strings.Contains(open[0].Bisect, "--bad "+commit(1)) || open[0].Accepted != nil || open[0].Change > -0.29 {
		t.Fatalf("results gate JSON: verdict %s, open regressions %+v; want ok and one open since %s", rows[0].Verdict, open, commit(1))
	}

	// A further drop fails like the first one, against the new level.
	if out := expect(4, "500", ExitGate, "gate REGRESSION: 1 regression(s)"); !regexp.MustCompile(`(699\.\d|700\.\d)\s+(499|500)\.\d\s+-28\.\d%`).MatchString(out) {
		t.Errorf("commit 4 at 500 is not judged against the level 700:\n%s", out)
	}

	// Accept the first step: written once, by whom, why.
	accept := f.args("results", "accept", "simnet-a/sim/bs4/bfloat16", "--at", short(commit(1)), "--reason", "new kernel trades speed for accuracy", "--by", "alice")
	if code, out, errOut := ciRun(t, accept...); code != ExitOK || !strings.Contains(out, "accepted regression since "+short(commit(1))) {
		t.Fatalf("results accept: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := ciRun(t, accept...); code != ExitFailed || !strings.Contains(errOut, "already accepted by alice") {
		t.Fatalf("a second accept: exit %d, want %d naming the first\n%s", code, ExitFailed, errOut)
	}
	if code, _, errOut := ciRun(t, f.args("results", "accept", "simnet-a/sim/bs4/bfloat16", "--at", commit(2), "--reason", "x")...); code != ExitUsage ||
		!strings.Contains(errOut, "no open regression since "+commit(2)) {
		t.Fatalf("accepting a commit that began no step: exit %d, want %d\n%s", code, ExitUsage, errOut)
	}
	expect(5, "500", ExitOK, "gate PASS", `accepted by alice`, `"new kernel trades speed for accuracy"`,
		"accepted regression since "+short(commit(1)), "open regression since "+short(commit(4)))
	expect(6, "450", ExitGate, "gate REGRESSION: 1 regression(s)")
}

// runOf is the run id a submit printed.
func runOf(t *testing.T, out string) string {
	t.Helper()
	m := submittedRun.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in the output:\n%s", out)
	}
	return m[1]
}
