package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// confirmMatrix is one sim job that reports 900 samples/sec, and
// repeatRate on its confirmation repeats.
func confirmMatrix(repeatRate string) string {
	return `
defaults:
  pool: sim
  runner: sim
  benchmark: {batch_size: 4, loop_count: 20}
  labels: {sim.duration: 20ms, sim.samples_per_sec: "900", sim.repeat_samples_per_sec: "` + repeatRate + `"}
matrix:
  benchmark:
    - {model: simnet-a}
`
}

// submitConfirm plants a history of 1000 samples/sec for simnet-a on main,
// submits the matrix with --wait --gate (default --confirm 2) on a fleet
// of three sim boards, and returns the exit code, the output, the run and
// the JUnit and Markdown reports.
func submitConfirm(t *testing.T, repeatRate string) (code int, out, run, junit, md string, f *ciFleet) {
	t.Helper()
	f = startCIFleet(t, 3)
	plantHistory(t, f.store, "hist", "simnet-a", "main", 1000, noise1pct, protocol.StatusPassed)
	dir := t.TempDir()
	matrix := filepath.Join(dir, "matrix.yaml")
	if err := os.WriteFile(matrix, []byte(confirmMatrix(repeatRate)), 0o644); err != nil {
		t.Fatal(err)
	}
	junitPath, mdPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
	code, out, errOut := ciRun(t, f.args("submit", "--matrix", matrix, "--commit", "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
		"--branch", "feature-x", "--repo", "acme/bench", "--ack-wait", ciAckWait.String(),
		"--wait", "--timeout", "60s", "--gate", "--junit", junitPath, "--summary-md", mdPath)...)
	mr := submittedRun.FindStringSubmatch(out)
	if mr == nil {
		t.Fatalf("no run id in the output (exit %d):\n%s\n%s", code, out, errOut)
	}
	j, _ := os.ReadFile(junitPath)
	m, _ := os.ReadFile(mdPath)
	return code, out + errOut, mr[1], string(j), string(m), f
}

// A planted regression (900 against 1000) that its two repeats do not
// reproduce (1000 each): the median is 1000, the run passes (exit 0) and
// every report says "not reproduced" with the attempts. The repeats are in
// the run's manifest, not rows of their own.
func TestConfirmNotReproducedPasses(t *testing.T) {
	t.Parallel()
	code, out, run, junit, md, f := submitConfirm(t, "1000")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0 (a regression the repeats do not reproduce):\n%s", code, out)
	}
	for _, want := range []string{"1 suspected regression(s): 2 jobs queued to confirm", "not reproduced", "gate PASS: 0 regression(s)", "1 not reproduced"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(junit, `name="confirmation.attempts" value="3"`) || !strings.Contains(junit, "not reproduced") || strings.Contains(junit, "<failure") {
		t.Errorf("junit should list 3 attempts, say not reproduced and fail nothing:\n%s", junit)
	}
	if !strings.Contains(md, "### Confirmation repeats") || !strings.Contains(md, "not reproduced") || !strings.Contains(md, ": PASS") {
		t.Errorf("markdown should show the attempts and PASS:\n%s", md)
	}
	var man protocol.RunManifest
	if err := storage.GetJSON(t.Context(), f.store, storage.ManifestKey(run), &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Jobs) != 3 || man.Jobs[1].Repeat != 1 || man.Jobs[2].Repeat != 2 || man.Jobs[1].Of != man.Jobs[0].ID {
		t.Fatalf("stored manifest should list the job and its 2 repeats: %+v", man.Jobs)
	}
	// The gate from the store alone says the same, with the attempts.
	code, gout, errOut := ciRun(t, "results", "gate", "--run", run, "--store", f.storeURL, "--format", "json")
	if code != ExitOK {
		t.Fatalf("results gate: exit %d\n%s%s", code, gout, errOut)
	}
	var rows []struct {
		Verdict      string `json:"verdict"`
		Confirmation *struct {
			Attempts []struct {
				Repeat        int     `json:"repeat"`
				SamplesPerSec float64 `json:"samples_per_sec"`
				Board         string  `json:"board"`
			} `json:"attempts"`
			Median     float64 `json:"median"`
			Reproduced bool    `json:"reproduced"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal([]byte(gout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("results gate json: %v\n%s", err, gout)
	}
	c := rows[0].Confirmation
	if rows[0].Verdict != "not-reproduced" || c == nil || len(c.Attempts) != 3 || c.Reproduced || c.Median < 990 {
		t.Fatalf("results gate: %s", gout)
	}
	if c.Attempts[0].SamplesPerSec > 910 || c.Attempts[1].Repeat != 1 || c.Attempts[2].SamplesPerSec < 990 {
		t.Errorf("attempts: %+v", c.Attempts)
	}
	// Re-submitting re-attaches: the repeats are the run's, not a change.
	code, out, run2, _, _, _ := submitConfirmAgain(t, f)
	if code != ExitOK || run2 != run || !strings.Contains(out, "re-attaching") || strings.Contains(out, "queued to confirm") {
		t.Errorf("re-submit: exit %d run %s:\n%s", code, run2, out)
	}
}

// submitConfirmAgain submits the not-reproduced matrix again to fleet f.
func submitConfirmAgain(t *testing.T, f *ciFleet) (int, string, string, string, string, *ciFleet) {
	t.Helper()
	matrix := filepath.Join(t.TempDir(), "matrix.yaml")
	if err := os.WriteFile(matrix, []byte(confirmMatrix("1000")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ciRun(t, f.args("submit", "--matrix", matrix, "--commit", "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
		"--branch", "feature-x", "--repo", "acme/bench", "--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s", "--gate")...)
	run := ""
	if i := strings.Index(out, "run "); i >= 0 {
		run = strings.Fields(out[i+4:])[0]
	}
	return code, out + errOut, run, "", "", f
}

// A planted regression its repeats reproduce (900 on every attempt) fails
// the gate (exit 2), and the reports show the attempts.
func TestConfirmReproducedFails(t *testing.T) {
	t.Parallel()
	code, out, _, junit, md, _ := submitConfirm(t, "900")
	if code != ExitGate {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitGate, out)
	}
	if !strings.Contains(out, "gate REGRESSION: 1 regression(s)") || !regexp.MustCompile(`: median (899|900)\.\d, reproduced`).MatchString(out) {
		t.Errorf("output should show the reproduced regression with its median:\n%s", out)
	}
	if !strings.Contains(junit, `type="regression"`) || !strings.Contains(junit, `name="confirmation.attempts" value="3"`) || !strings.Contains(junit, `name="confirmation.reproduced" value="true"`) {
		t.Errorf("junit should fail the regression with its 3 attempts:\n%s", junit)
	}
	if !strings.Contains(md, ": REGRESSION") || !strings.Contains(md, "### Confirmation repeats") {
		t.Errorf("markdown:\n%s", md)
	}
}
