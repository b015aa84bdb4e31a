package cli

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

// inproc is the command line run in process, for the tests inside
// package cli; ciRun its Output.
var (
	inproc = clitest.CLI{Main: Run}
	ciRun  = inproc.Output
)

// ciFleet is fleettest's fleet with one worker of sim slots, under the
// short names these tests use.
type ciFleet struct {
	url      string
	storeURL string
	store    storage.Bucket
	worker   *worker.Worker
}

const ciAckWait = 5 * time.Second

func startCIFleet(t *testing.T, slots int) *ciFleet {
	t.Helper()
	f := fleettest.New(t, fleettest.Options{AckWait: ciAckWait})
	w := fleettest.StartWorker(t, f.WorkerConfig(t, "ci-worker", fleettest.SimSlots("sim", slots)))
	return &ciFleet{url: f.URL, storeURL: f.StoreURL, store: f.Store, worker: w}
}

func (f *ciFleet) args(args ...string) []string {
	return append(args, "--nats", f.url, "--store", f.storeURL, "--log-level", "warn")
}

// plantHistory writes passed results of model (pool sim, runner sim, batch
// 4, bfloat16) on branch for ten earlier runs, at base·(1+d) for the
// deviations d, oldest first; run names are prefix-0... .
func plantHistory(t *testing.T, store storage.Bucket, prefix, model, branch string, base float64, devs []float64, status protocol.Status) {
	t.Helper()
	now := time.Now().UTC()
	for i, d := range devs {
		created := now.Add(-time.Duration(len(devs)-i) * time.Hour)
		run := fmt.Sprintf("%s-%d", prefix, i)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID(run, model), Run: run, RunCreatedAt: created,
			Pool: "sim", Runner: "sim", Status: status, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark:    protocol.Benchmark{Model: model, BatchSize: 4, LoopCount: 20, WarmupCount: 20, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "acme/bench", Commit: fmt.Sprintf("%040d", i), Branch: branch},
			Measurements: protocol.Measurements{SamplesPerSec: base * (1 + d)},
			PCC:          protocol.PCC{Value: 0.999, Min: 0.99, Passed: status == protocol.StatusPassed}}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
}

// noise1pct are deviations within ±1% whose MAD is 0.6%: the noise band
// (3 × 1.4826 × MAD) is ±2.67% of the baseline.
var noise1pct = []float64{-0.010, 0.002, -0.008, 0.004, -0.006, 0.006, -0.004, 0.008, -0.002, 0.010}

// The sim jobs of this matrix all report 900 samples/sec.
const ciMatrix = `
defaults:
  pool: sim
  runner: sim
  benchmark: {batch_size: 4, loop_count: 20}
  labels: {sim.duration: 20ms, sim.samples_per_sec: "900"}
matrix:
  benchmark:
    - {model: simnet-a}
    - {model: simnet-b}
    - {model: simnet-new}
`

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

var submittedRun = regexp.MustCompile(`run (\S+): \d+ jobs? submitted`)

// A CI run for a commit on a feature branch: one series 10% slower than
// its history on main, one 2% slower (inside the noise), one without
// history. submit --wait --gate exits 2; the JUnit and Markdown reports
// name the 10% series as the regression and not the 2% one. Submitting the
// same commit again re-attaches: nothing is published, the results stay,
// and the gate trips again.
func TestCISubmitGateReportsAndReattach(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 3)
	// simnet-a: baseline 1000 → 900 is -10%. simnet-b: baseline 918.37 →
	// 900 is -2%, inside the ±2.67% noise band.
	plantHistory(t, f.store, "hist", "simnet-a", "main", 1000, noise1pct, protocol.StatusPassed)
	plantHistory(t, f.store, "histb", "simnet-b", "main", 900/0.98, noise1pct, protocol.StatusPassed)
	// Results that must not count: another branch, and failed results.
	plantHistory(t, f.store, "feat", "simnet-a", "feature-y", 5000, noise1pct, protocol.StatusPassed)
	plantHistory(t, f.store, "bad", "simnet-b", "main", 10, noise1pct[:3], protocol.StatusFailed)

	dir := t.TempDir()
	matrix := filepath.Join(dir, "matrix-ci.yaml")
	if err := os.WriteFile(matrix, []byte(ciMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	junitPath := filepath.Join(dir, "junit.xml")
	mdPath := filepath.Join(dir, "summary.md")
	if err := os.WriteFile(mdPath, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	submit := f.args("submit", "--matrix", matrix, "--commit", "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
		"--branch", "feature-x", "--repo", "acme/bench", "--ack-wait", ciAckWait.String(),
		"--wait", "--timeout", "60s", "--gate", "--junit", junitPath, "--summary-md", mdPath)

	code, out, errOut := ciRun(t, submit...)
	if code != ExitGate {
		t.Fatalf("submit --gate: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitGate, out, errOut)
	}
	mr := submittedRun.FindStringSubmatch(out)
	if mr == nil {
		t.Fatalf("no run id in the output:\n%s", out)
	}
	run := mr[1]
	if !strings.HasPrefix(run, "ci-bench-c0ffee00c0ff") {
		t.Errorf("run id %q is not derived from the repo and commit", run)
	}
	if !strings.Contains(out, "gate REGRESSION: 1 regression(s), 0 failed") {
		t.Errorf("gate summary missing from the output:\n%s", out)
	}

	// The manifest in the store: a CI run defaults to high priority.
	var man protocol.RunManifest
	if err := storage.GetJSON(t.Context(), f.store, storage.ManifestKey(run), &man); err != nil {
		t.Fatal(err)
	}
	if man.Priority != protocol.PriorityHigh || man.Source.Branch != "feature-x" {
		t.Errorf("manifest priority %q branch %q, want high and feature-x", man.Priority, man.Source.Branch)
	}

	// The results report 900 samples/sec (sim.samples_per_sec).
	results := fleettest.Results(t, f.store, run)
	// Three jobs, and the two confirmation repeats of the regression.
	if len(results) != 5 {
		t.Fatalf("%d results, want 5", len(results))
	}
	for _, r := range results {
		if s := r.Measurements.SamplesPerSec; s < 897 || s > 903 {
			t.Errorf("%s: %.1f samples/sec, want 900 ± 0.3%%", r.Benchmark.Model, s)
		}
	}

	// JUnit: parses, three cases, one failure: the 10% series.
	checkJUnit := func() {
		t.Helper()
		data, err := os.ReadFile(junitPath)
		if err != nil {
			t.Fatal(err)
		}
		var doc junitDoc
		if err := xml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("junit is not XML: %v\n%s", err, data)
		}
		if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 0 || len(doc.Suites) != 1 || doc.Suites[0].Tests != 3 {
			t.Fatalf("junit counts tests=%d failures=%d errors=%d:\n%s", doc.Tests, doc.Failures, doc.Errors, data)
		}
		for _, c := range doc.Suites[0].Cases {
			switch c.Name {
			case "simnet-a/sim/bs4/bfloat16":
				if c.Failure == nil || c.Failure.Type != "regression" || !strings.Contains(c.Failure.Message, "below the baseline 1000.0") {
					t.Errorf("simnet-a: failure %+v, want a regression against 1000", c.Failure)
				}
			case "simnet-b/sim/bs4/bfloat16", "simnet-new/sim/bs4/bfloat16":
				if c.Failure != nil {
					t.Errorf("%s: unexpected failure %+v", c.Name, c.Failure)
				}
			default:
				t.Errorf("unexpected testcase %q", c.Name)
			}
		}
	}
	checkJUnit()

	// Markdown: appended after the earlier step's content; REGRESSION;
	// the regressions section names simnet-a only; the table starts with it.
	data, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	if !strings.HasPrefix(md, "# earlier step\n## benchfleet run `"+run+"`: REGRESSION\n") {
		t.Fatalf("markdown heading:\n%s", md)
	}
	regs := md[strings.Index(md, "### Regressions"):strings.Index(md, "| model |")]
	if !strings.Contains(regs, "simnet-a/sim/bs4/bfloat16") || strings.Contains(regs, "simnet-b") {
		t.Errorf("regressions section should name simnet-a and not simnet-b:\n%s", regs)
	}
	var table []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| simnet") {
			table = append(table, l)
		}
	}
	if len(table) != 3 || !strings.HasPrefix(table[0], "| simnet-a |") || !strings.HasSuffix(table[0], "| **regression** |") {
		t.Fatalf("markdown table should start with the regression:\n%s", strings.Join(table, "\n"))
	}
	for _, l := range table[1:] {
		if strings.Contains(l, "regression") {
			t.Errorf("only simnet-a regressed: %s", l)
		}
		if strings.HasPrefix(l, "| simnet-b |") && !strings.Contains(l, "-2.0%") {
			t.Errorf("simnet-b should be 2.0%% slower: %s", l)
		}
	}

	// Re-run the same CI job: re-attach, publish nothing, results unchanged.
	_, js := fleettest.Connect(t, f.url)
	stream, err := js.Stream(t.Context(), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	before, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = ciRun(t, submit...)
	if code != ExitGate {
		t.Fatalf("re-submit: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitGate, out, errOut)
	}
	if !strings.Contains(out, "run "+run+" already submitted") || !strings.Contains(out, "re-attaching, nothing new published") {
		t.Errorf("re-submit should say it re-attaches to %s:\n%s", run, out)
	}
	after, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// LastSeq counts every message ever stored; Msgs may only shrink as the
	// last acks of the first wait land.
	if after.State.LastSeq != before.State.LastSeq || after.State.Msgs > before.State.Msgs {
		t.Errorf("BENCH_JOBS grew on re-submit: last seq %d → %d, msgs %d → %d",
			before.State.LastSeq, after.State.LastSeq, before.State.Msgs, after.State.Msgs)
	}
	again := fleettest.Results(t, f.store, run)
	if len(again) != len(results) {
		t.Fatalf("%d results after re-submit, want %d", len(again), len(results))
	}
	for id, r := range results {
		a := again[id]
		if a == nil || !a.StartedAt.Equal(r.StartedAt) || a.Measurements.SamplesPerSec != r.Measurements.SamplesPerSec || a.Attempt != r.Attempt {
			t.Errorf("result %s changed on re-submit", id)
		}
	}
	checkJUnit()
	data, _ = os.ReadFile(mdPath)
	if n := strings.Count(string(data), "## benchfleet run `"+run+"`: REGRESSION"); n != 2 {
		t.Errorf("the step summary should hold two appended reports, has %d", n)
	}

	// The gate on its own, from the store only: JSON shape and verdicts.
	code, out, errOut = ciRun(t, "results", "gate", "--run", run, "--store", f.storeURL, "--format", "json")
	if code != ExitGate {
		t.Fatalf("results gate: exit %d, want %d\n%s%s", code, ExitGate, out, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("results gate json: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, r := range rows {
		if _, ok := r["confirmation"]; len(r) != 9 && !(ok && len(r) == 10) {
			t.Errorf("gate row has %d fields, want the 9 of the contract (and its confirmation): %v", len(r), r)
		}
		verdicts[r["model"].(string)] = r["verdict"].(string)
		if r["model"] == "simnet-new" && (r["baseline"] != nil || r["change"] != nil) {
			t.Errorf("simnet-new has no history but a baseline: %v", r)
		}
	}
	want := map[string]string{"simnet-a": "regression", "simnet-b": "ok", "simnet-new": "insufficient-history"}
	if fmt.Sprint(verdicts) != fmt.Sprint(want) {
		t.Errorf("verdicts %v, want %v", verdicts, want)
	}
	// A 1% threshold does not flag simnet-b: its 2% drop is inside the noise band.
	code, out, _ = ciRun(t, "results", "gate", "--run", run, "--store", f.storeURL, "--threshold", "1%")
	if code != ExitGate || !strings.Contains(out, "1 regression(s)") {
		t.Errorf("--threshold 1%%: exit %d, want 2 with one regression:\n%s", code, out)
	}
	// Against a baseline branch with no history nothing trips.
	code, out, _ = ciRun(t, "results", "gate", "--run", run, "--store", f.storeURL, "--baseline-branch", "release-9")
	if code != ExitOK || !strings.Contains(out, "3 insufficient-history") {
		t.Errorf("--baseline-branch release-9: exit %d, want 0 with 3 insufficient-history:\n%s", code, out)
	}

	// compare: the latest history run against the CI run.
	code, out, errOut = ciRun(t, "results", "compare", "hist-9", run, "--store", f.storeURL, "--format", "json")
	if code != ExitOK {
		t.Fatalf("results compare: exit %d\n%s%s", code, out, errOut)
	}
	var cmp []struct {
		Model  string   `json:"model"`
		A      float64  `json:"a"`
		B      float64  `json:"b"`
		Change *float64 `json:"change"`
	}
	if err := json.Unmarshal([]byte(out), &cmp); err != nil || len(cmp) != 1 || cmp[0].Model != "simnet-a" || cmp[0].Change == nil || *cmp[0].Change > -0.09 {
		t.Errorf("compare hist-9 %s: %v %+v\n%s", run, err, cmp, out)
	}
}

// A run with a failed job and a regression exits 1: failures take
// precedence over the gate. Gated from the store alone (no manifest).
func TestCIGateFailureTakesPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	plantHistory(t, store, "hist", "simnet-a", "main", 1000, noise1pct, protocol.StatusPassed)
	plantHistory(t, store, "histb", "simnet-b", "main", 1000, noise1pct, protocol.StatusPassed)
	now := time.Now().UTC()
	for _, c := range []struct {
		model  string
		sps    float64
		status protocol.Status
	}{{"simnet-a", 800, protocol.StatusPassed}, {"simnet-b", 1000, protocol.StatusFailed}} {
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID("pr-1", c.model), Run: "pr-1", RunCreatedAt: now,
			Pool: "sim", Runner: "sim", Status: c.status, Attempt: 1,
			Benchmark:    protocol.Benchmark{Model: c.model, BatchSize: 4, LoopCount: 20, WarmupCount: 20, DataFormat: "bfloat16"},
			Source:       protocol.Source{Branch: "feature-x"},
			Measurements: protocol.Measurements{SamplesPerSec: c.sps}}
		if c.status == protocol.StatusFailed {
			r.Error = &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "pcc 0.31 below 0.99"}
			r.PCC = protocol.PCC{Value: 0.31, Min: 0.99}
		}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	// The verdicts and the report are the library's (producer
	// TestJudgeStored); here: the exit code, the output, the file written.
	md := filepath.Join(t.TempDir(), "summary.md")
	code, out, errOut := ciRun(t, "results", "gate", "--run", "pr-1", "--store", "file://"+dir, "--summary-md", md)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d (a failed job beats a regression)\n%s%s", code, ExitFailed, out, errOut)
	}
	if !strings.Contains(out, "gate FAIL: 1 regression(s), 1 failed") {
		t.Errorf("output:\n%s", out)
	}
	if data, _ := os.ReadFile(md); !strings.Contains(string(data), "`pr-1`: FAIL") {
		t.Errorf("--summary-md: want the FAIL report:\n%s", data)
	}
}

// Usage errors exit 64 and name the flag, before anything is submitted.
func TestCIUsageErrors(t *testing.T) {
	t.Parallel()
	store := "file://" + t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"results", "gate", "--run", "r1", "--store", store, "--threshold", "5"}, "--threshold"},
		{[]string{"results", "gate", "--run", "r1", "--store", store, "--threshold", "abc%"}, "--threshold"},
		{[]string{"results", "gate", "--run", "r1", "--store", store, "--window", "0"}, "--window"},
		{[]string{"results", "gate", "--run", "r1", "--store", store, "--min-history", "11"}, "--min-history"},
		{[]string{"results", "gate", "--run", "r1", "--store", store, "--format", "xml"}, "--format"},
		{[]string{"results", "gate", "--store", store}, "--run"},
		{[]string{"results", "gate", "--run", "nothing-here", "--store", store}, "nothing-here"},
		{[]string{"results", "compare", "a", "--store", store}, "accepts 2 arg"},
		{[]string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "1", "--wait", "--gate",
			"--nats", "nats://127.0.0.1:1"}, "--store"},
		{[]string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "1", "--wait", "--gate",
			"--nats", "nats://127.0.0.1:1", "--store", store, "--threshold", "150%"}, "--threshold"},
	} {
		code, _, errOut := ciRun(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.flag) {
			t.Errorf("%v: exit %d, stderr %q; want 64 naming %s", tc.args, code, errOut, tc.flag)
		}
	}
}

// A CI job (a commit, no --priority) runs at high priority: submitted
// behind 50 queued low-priority jobs on ONE slot, it starts right after the
// job that was already running.
func TestCIHighPriorityJumpsTheQueue(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	_, js := fleettest.Connect(t, f.url)
	topo := fleettest.Topology(t, js, topology.Config{AckWait: ciAckWait})
	lows := fleettest.SimJobs(t, "nightly-low", 50, map[string]string{"sim.duration": "20ms"})
	// The first low job runs long enough for the CI job to queue behind
	// the other 49 while it runs.
	lows[0].Labels["sim.duration"] = "3s"
	lows[0].ID = protocol.JobID("nightly-low", lows[0].Cell())
	fleettest.Submit(t, js, topo, f.store, "nightly-low", protocol.PriorityLow, lows)
	fleettest.Eventually(t, 20*time.Second, "the first low job to run", func() bool {
		for _, d := range f.worker.Status().Devices {
			if d.Job == lows[0].ID {
				return true
			}
		}
		return false
	})

	code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet-ci", "--batch-size", "4", "--loop-count", "10",
		"--label", "sim.duration=20ms", "--commit", "feedface", "--branch", "feature-x", "--repo", "acme/bench",
		"--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s")...)
	if code != ExitOK {
		t.Fatalf("ci submit: exit %d\n%s%s", code, out, errOut)
	}
	mr := submittedRun.FindStringSubmatch(out)
	if mr == nil {
		t.Fatalf("no run id in the output:\n%s", out)
	}
	var man protocol.RunManifest
	if err := storage.GetJSON(t.Context(), f.store, storage.ManifestKey(mr[1]), &man); err != nil {
		t.Fatal(err)
	}
	if man.Priority != protocol.PriorityHigh {
		t.Fatalf("CI run priority %q, want high", man.Priority)
	}
	ci := fleettest.Results(t, f.store, mr[1])
	if len(ci) != 1 {
		t.Fatalf("%d CI results, want 1", len(ci))
	}
	var hi *protocol.Result
	for _, r := range ci {
		hi = r
	}
	// One slot: a low job that started before the CI job has finished and
	// has its result by now, so the low results read now are complete for
	// every job that started earlier.
	before := 0
	for _, r := range fleettest.Results(t, f.store, "nightly-low") {
		if r.StartedAt.Before(hi.StartedAt) {
			before++
		}
	}
	if before > 1 {
		t.Fatalf("%d low-priority jobs started before the high one; want at most the one already running", before)
	}
	t.Logf("the CI job started after %d low job(s), ahead of %d queued", before, 50-before)
}
