package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// Re-submitting a run id with a different spec is a usage
// error that says what differs; the same spec still re-attaches.
func TestResubmitDifferentSpecExits64(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	submit := func(batch string) (int, string, string) {
		return ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", batch, "--loop-count", "4",
			"--run", "respec", "--label", "sim.duration=1ms", "--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s")...)
	}
	if code, out, errOut := submit("4"); code != ExitOK {
		t.Fatalf("first submit: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := submit("16")
	if code != ExitUsage {
		t.Fatalf("re-submit with --batch-size 16: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, out, errOut)
	}
	if strings.Contains(out, "re-attaching") {
		t.Errorf("a different spec must not re-attach:\n%s", out)
	}
	for _, want := range []string{"respec", "batch 16", "batch 4"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	t.Logf("re-submit with another batch size says: %s", errOut)
	code, out, errOut = submit("4")
	if code != ExitOK || !strings.Contains(out, "re-attaching") {
		t.Fatalf("re-submit of the same spec: exit %d, want 0 and re-attaching\n%s\n%s", code, out, errOut)
	}
}

// `runs cancel` of a finished run says so and exits 0; runs list does not
// call it cancelled (what CancelRun changes is producer's test).
func TestCancelFinishedRunSaysSo(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	if code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "done1", "--label", "sim.duration=1ms", "--wait", "--timeout", "60s")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := ciRun(t, f.args("runs", "cancel", "done1")...)
	if code != ExitOK || !strings.Contains(out, "already finished") {
		t.Fatalf("cancel of a finished run: exit %d, want 0 and 'already finished'\n%s\n%s", code, out, errOut)
	}
	_, out, _ = ciRun(t, f.args("runs", "list")...)
	if strings.Contains(out, "cancelled") {
		t.Errorf("runs list shows the finished run as cancelled:\n%s", out)
	}
}

// `runs cancel` says how many queued jobs it removed (also of a pool no
// worker serves), and `runs watch` of the run then ends at once, exit 1
// with the job cancelled (what CancelRun removes and records is
// producer's test).
func TestCancelRemovesQueuedJobs(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1) // serves sim only
	if code, out, errOut := ciRun(t, f.args("submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "2", "--loop-count", "4",
		"--run", "orphan1")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := ciRun(t, f.args("runs", "cancel", "orphan1")...)
	if code != ExitOK || !strings.Contains(out, "1 job removed from the queue") {
		t.Fatalf("cancel: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := ciRun(t, f.args("runs", "cancel", "nosuchrun")...); code != ExitUsage || !strings.Contains(errOut, `run "nosuchrun" not found`) {
		t.Errorf("cancel of an unknown run: exit %d, want %d\n%s%s", code, ExitUsage, out, errOut)
	}
	// The removed job ended: watching the run returns at once, cancelled.
	code, out, errOut = ciRun(t, f.args("runs", "watch", "orphan1", "--timeout", "30s")...)
	if code != ExitFailed || !strings.Contains(out, "cancelled") {
		t.Errorf("watch after cancel: exit %d, want 1 with the job cancelled\n%s\n%s", code, out, errOut)
	}
}

// Submitting to a pool no live worker serves warns on
// stderr, naming the pool; a served pool does not.
func TestSubmitWarnsOfUnservedPool(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1) // serves sim only
	_, js := fleettest.Connect(t, f.url)
	topo, err := topology.Open(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the worker's heartbeat", func() bool {
		fleet, err := fleet.ReadFleet(t.Context(), topo.Workers)
		return err == nil && len(fleet) == 1
	})
	code, _, errOut := ciRun(t, f.args("submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "2", "--loop-count", "4", "--run", "nocpu")...)
	if code != ExitOK || !strings.Contains(errOut, "no live worker serves pool cpu") {
		t.Fatalf("submit to an unserved pool: exit %d, stderr lacks the warning:\n%s", code, errOut)
	}
	code, _, errOut = ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "yessim")...)
	if code != ExitOK || strings.Contains(errOut, "no live worker") {
		t.Fatalf("submit to a served pool: exit %d, stderr:\n%s", code, errOut)
	}
}

// A hand-written job with only the required fields,
// published straight to BENCH_JOBS (as with natscli), runs with the
// documented defaults: priority from the subject, warmup min(32, loop),
// bfloat16, the pool's runner.
func TestHandWrittenJobGetsDefaults(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	_, js := fleettest.Connect(t, f.url)
	// No id: a hand-written job's id is the id of its content.
	minimal := `{"run": "handrun", "benchmark": {"model": "simnet", "batch_size": 2, "loop_count": 10}, "labels": {"sim.duration": "1ms"}}`
	if _, err := js.Publish(t.Context(), protocol.JobSubject("sim", protocol.PriorityLow), []byte(minimal)); err != nil {
		t.Fatal(err)
	}
	var r *protocol.Result
	fleettest.Eventually(t, 60*time.Second, "the hand-written job's result", func() bool {
		rs, _, err := index.QueryJSON(t.Context(), f.store, index.Filter{Run: "handrun"})
		if err == nil && len(rs) == 1 {
			r = rs[0]
		}
		return r != nil
	})
	if r.Status != protocol.StatusPassed {
		t.Fatalf("status %s (%+v), want passed", r.Status, r.Error)
	}
	if r.Benchmark.WarmupCount != 10 || r.Benchmark.DataFormat != protocol.FormatBfloat16 || r.Runner != protocol.RunnerSim || r.Pool != "sim" {
		t.Errorf("defaults not applied: warmup %d format %q runner %q pool %q", r.Benchmark.WarmupCount, r.Benchmark.DataFormat, r.Runner, r.Pool)
	}
	info, err := js.Stream(t.Context(), protocol.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := info.Info(t.Context()); st.State.Msgs != 0 {
		t.Errorf("%d dead letters, want none", st.State.Msgs)
	}
}

// A failed result's unmeasured figures are absent: null
// in the JSON and in the Parquet index, "-" in tables (and empty in CSV).
func TestUnmeasuredIsAbsentEverywhere(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "nomeasure", "--label", "sim.fail=permanent", "--wait", "--timeout", "60s")...)
	if code != ExitFailed {
		t.Fatalf("submit: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = ciRun(t, f.args("results", "query", "--run", "nomeasure", "--format", "json")...)
	if code != ExitOK {
		t.Fatalf("query: exit %d\n%s", code, errOut)
	}
	var docs []struct {
		Measurements map[string]json.RawMessage `json:"measurements"`
		PCC          map[string]json.RawMessage `json:"pcc"`
	}
	if err := json.Unmarshal([]byte(out), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("query json: %v\n%s", err, out)
	}
	if v := string(docs[0].Measurements["samples_per_sec"]); v != "null" {
		t.Errorf("measurements.samples_per_sec = %s, want null", v)
	}
	if v := string(docs[0].PCC["value"]); v != "null" {
		t.Errorf("pcc.value = %s, want null", v)
	}
	_, out, _ = ciRun(t, f.args("results", "query", "--run", "nomeasure")...)
	if strings.Contains(out, "0.000") || !strings.Contains(out, "(1 result)") {
		t.Errorf("the table prints an unmeasured figure as 0, or says '1 results':\n%s", out)
	}
	_, out, _ = ciRun(t, f.args("results", "query", "--run", "nomeasure", "--format", "csv")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Contains(lines[1], ",0,") {
		t.Errorf("csv prints an unmeasured figure as 0:\n%s", out)
	}
	// The Parquet index: the columns are null.
	if code, _, errOut := ciRun(t, f.args("results", "compact")...); code != ExitOK {
		t.Fatalf("compact: exit %d\n%s", code, errOut)
	}
	var parts []string
	for k, err := range f.store.List(t.Context(), storage.PrefixIndex) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(k, ".parquet") { // not the seal protocol's markers
			parts = append(parts, k)
		}
	}
	if len(parts) != 1 {
		t.Fatalf("index parts %v, want 1", parts)
	}
	rc, err := f.store.Get(t.Context(), parts[0])
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"samples_per_sec", "pcc_value", "total_time_s"} {
		leaf, ok := pf.Schema().Lookup(col)
		if !ok {
			t.Fatalf("no column %s", col)
		}
		rows := pf.RowGroups()[0].Rows()
		buf := make([]parquet.Row, 1)
		if n, _ := rows.ReadRows(buf); n != 1 {
			t.Fatalf("no row")
		}
		rows.Close()
		if v := buf[0][leaf.ColumnIndex]; !v.IsNull() {
			t.Errorf("parquet %s = %v, want null", col, v)
		}
	}
}

// A job re-queued by `dlq retry` that fails again says
// which attempt it died on, not "the last of 4" beside 8 attempts.
func TestDLQRetryAttemptsInReason(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	if code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "dies", "--label", "sim.fail=transient", "--label", "sim.duration=1ms")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errOut)
	}
	type dead struct {
		ID       string `json:"id"`
		Reason   string `json:"reason"`
		Attempts int    `json:"attempts"`
	}
	deadWith := func(attempts int) *dead {
		var found *dead
		fleettest.Eventually(t, 60*time.Second, fmt.Sprintf("a dead letter after %d attempts", attempts), func() bool {
			_, out, _ := ciRun(t, f.args("dlq", "list", "--format", "json")...)
			var ds []dead
			if json.Unmarshal([]byte(out), &ds) != nil {
				return false
			}
			for i := range ds {
				if ds[i].Attempts == attempts {
					found = &ds[i]
				}
			}
			return found != nil
		})
		return found
	}
	first := deadWith(4)
	if !strings.Contains(first.Reason, "last of 4 attempts") {
		t.Errorf("first dead letter: %q", first.Reason)
	}
	if code, out, errOut := ciRun(t, f.args("dlq", "retry", first.ID)...); code != ExitOK {
		t.Fatalf("dlq retry: exit %d\n%s\n%s", code, out, errOut)
	}
	second := deadWith(8)
	if strings.Contains(second.Reason, "last of 4 attempts") || !strings.Contains(second.Reason, "attempt 8") {
		t.Errorf("dead letter after dlq retry, 8 attempts: reason %q", second.Reason)
	}
}

// `runs list` shows every run's state; a cancelled job is
// counted as cancelled, not failed.
func TestRunsListStateAndCancelledCount(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1) // serves sim only
	if code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "stpassed", "--label", "sim.duration=1ms", "--wait", "--timeout", "60s")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, r := range []string{"stqueued", "stcancelled"} {
		if code, out, errOut := ciRun(t, f.args("submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "2", "--loop-count", "4", "--run", r)...); code != ExitOK {
			t.Fatalf("submit: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	if code, out, errOut := ciRun(t, f.args("runs", "cancel", "stcancelled")...); code != ExitOK {
		t.Fatalf("cancel: exit %d\n%s\n%s", code, out, errOut)
	}
	_, out, _ := ciRun(t, f.args("runs", "list")...)
	for run, state := range map[string]string{"stpassed": "passed", "stqueued": "queued", "stcancelled": "cancelled"} {
		if !regexp.MustCompile(`(?m)^` + run + `\s.*\s` + state + `\s*$`).MatchString(out) {
			t.Errorf("runs list: %s is not shown %s:\n%s", run, state, out)
		}
	}
	_, out, _ = ciRun(t, f.args("runs", "watch", "stcancelled", "--timeout", "30s")...)
	if !strings.Contains(out, "0 failed, 1 cancelled") {
		t.Errorf("watch of a cancelled run counts the cancelled job as failed:\n%s", out)
	}
}

// The small surprises of the first hour.
func TestFirstHourMessages(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	// "1 job", not "1 jobs".
	code, out, _ := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "onejob")...)
	if code != ExitOK || !strings.Contains(out, "1 job submitted") {
		t.Errorf("submit output: %s", out)
	}
	// "1 worker", not "1 workers".
	fleettest.Eventually(t, 30*time.Second, "the worker in fleet status", func() bool {
		_, out, _ := ciRun(t, f.args("fleet", "status")...)
		return strings.Contains(out, "1 worker, 1 device:")
	})
	// A missing --batch-size is required, not "0: must be positive".
	code, _, errOut := ciRun(t, "submit", "--pool", "cpu", "--model", "mlp", "--loop-count", "4")
	if code != ExitUsage || !strings.Contains(errOut, "--batch-size is required") {
		t.Errorf("missing --batch-size: exit %d: %s", code, errOut)
	}
	// An unknown job is not found (exit 1), not a usage error.
	code, _, errOut = ciRun(t, f.args("results", "show", "jnosuchjob")...)
	if code != ExitFailed || !strings.Contains(errOut, "no result for job") {
		t.Errorf("results show of an unknown job: exit %d: %s", code, errOut)
	}
	// Matrix errors name the line and key, not a Go type.
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(mf, []byte("defaults:\n  pool: cpu\n  benchmark: {model: mlp, batch_size: 1, loop_count: 2}\nmatrixx:\n  pool: [cpu]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = ciRun(t, "submit", "--matrix", mf)
	if code != ExitUsage || !strings.Contains(errOut, `line 4: unknown key "matrixx"`) || strings.Contains(errOut, "producer.") {
		t.Errorf("matrix with an unknown key: exit %d: %s", code, errOut)
	}
	// worker --help's example store is where dev writes it (DIR/store).
	_, out, _ = ciRun(t, "worker", "--help")
	if !strings.Contains(out, "--store file:///tmp/bf/store") {
		t.Errorf("worker --help example store:\n%s", out)
	}
	// The sim labels are documented.
	doc, err := os.ReadFile("../../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{sim.LabelDuration, sim.LabelFail, sim.LabelFailAttempts, sim.LabelPCC, sim.LabelSamplesPerSec} {
		if !strings.Contains(string(doc), "`"+l+"`") {
			t.Errorf("docs/OPERATIONS.md does not document the sim label %s", l)
		}
	}
}

// --token (env NATS_TOKEN) authenticates, as the README says: a wrong
// token is refused by the server and the error says the token was (a
// token that never reached the server would be refused as no credentials).
func TestTokenFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "token.conf")
	if err := os.WriteFile(conf, []byte("authorization { token: \"s3cret-token\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "nats"), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	code, _, errOut := ciRun(t, "fleet", "status", "--nats", url, "--token", "wrong")
	if code != ExitFailed || !strings.Contains(errOut, "Authorization Violation") ||
		!strings.Contains(errOut, "the server refused the token (NATS_TOKEN, --token)") {
		t.Errorf("a wrong token: exit %d, want %d with the server's authorization error naming the token:\n%s", code, ExitFailed, errOut)
	}
	if code, _, errOut := ciRun(t, "submit", "--nats", url, "--token", "s3cret-token", "--pool", "sim", "--model", "simnet",
		"--batch-size", "1", "--loop-count", "1", "--run", "tok"); code != ExitOK {
		t.Errorf("--token: exit %d: %s", code, errOut)
	}
}
