package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// A mistyped flag names the flag meant.
func TestMistypedFlagSaysDidYouMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--pool", "cpu", "--modle", "mlp"}, "unknown flag: --modle (did you mean --model?)"},
		{[]string{"results", "query", "--stauts", "error"}, "(did you mean --status?)"},
		{[]string{"submit", "--matirx", "m.yaml"}, "(did you mean --matrix?)"},
		// A global flag, inherited by the subcommand.
		{[]string{"fleet", "status", "--stroe", "file:///x"}, "(did you mean --store?)"},
	} {
		code, _, errOut := ciRun(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", c.args, code, errOut, c.want)
		}
	}
	// Nothing close: no guess.
	if _, _, errOut := ciRun(t, "submit", "--zzzzzz"); strings.Contains(errOut, "did you mean") {
		t.Errorf("a guess for --zzzzzz: %q", errOut)
	}
}

// No flag's --help shows a phrase as its argument name
// (pflag takes a `quoted` word of the usage as the name: `dev --help`
// showed "--ui benchfleet serve").
func TestFlagArgumentNamesAreWords(t *testing.T) {
	t.Parallel()
	a := &app{stdout: new(strings.Builder), stderr: new(strings.Builder)}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: --help shows %q as its argument", c.CommandPath(), f.Name, "--"+f.Name+" "+name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
	code, out, _ := ciRun(t, "dev", "--help")
	if code != ExitOK || !strings.Contains(out, "--ui ADDR") {
		t.Errorf("dev --help: exit %d, want --ui ADDR in:\n%s", code, out)
	}
}

// A wrong pool says what is wrong first; the job cell
// it is wrong in follows.
func TestWrongPoolSaysTheProblemFirst(t *testing.T) {
	t.Parallel()
	code, _, errOut := ciRun(t, "submit", "--pool", "n151", "--model", "mlp", "--batch-size", "8", "--loop-count", "8",
		"--nats", "nats://127.0.0.1:1")
	if code != ExitUsage || !strings.HasPrefix(errOut, `benchfleet: pool: must be one of `) || !strings.Contains(errOut, `(got "n151")`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// A YAML syntax error names the offending line, not its
// parent key's.
func TestMatrixSyntaxErrorNamesTheOffendingLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.yaml")
	doc := "defaults:\n  pool: sim\n  runner: sim\n  benchmark: {batch_size: 4, loop_count: 20}\n labels: {sim.duration: 1ms}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := ciRun(t, "submit", "--matrix", path, "--nats", "nats://127.0.0.1:1")
	if code != ExitUsage || !strings.Contains(errOut, "line 5: ") {
		t.Fatalf("exit %d, stderr %q; want line 5 (the key indented one space)", code, errOut)
	}
}

// `topology apply` names every stream and bucket it made.
func TestTopologyApplyNamesEverything(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	code, out, errOut := ciRun(t, "topology", "apply", "--nats", srv.ClientURL(), "--log-level", "warn")
	if code != ExitOK {
		t.Fatalf("topology apply: exit %d\n%s%s", code, out, errOut)
	}
	_, js := fleettest.Connect(t, srv.ClientURL())
	var names []string
	for n := range js.StreamNames(t.Context()).Name() {
		names = append(names, n)
	}
	for n := range js.KeyValueStoreNames(t.Context()).Name() {
		names = append(names, n)
	}
	if len(names) < 6 {
		t.Fatalf("only %v made", names)
	}
	for _, n := range names {
		// KV buckets are streams named KV_<bucket>: name the bucket.
		n = strings.TrimPrefix(n, "KV_")
		if !strings.Contains(out, n) {
			t.Errorf("topology apply made %s but does not say so: %q", n, out)
		}
	}
	if !strings.Contains(out, protocol.BucketHealth) {
		t.Errorf("no %s in %q", protocol.BucketHealth, out)
	}
}

// `runs watch` of a finished run prints its current state
// first, not the state after the first of its results was read.
func TestRunsWatchOfFinishedRunPrintsCurrentState(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 2)
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(ciMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := ciRun(t, f.args("submit", "--matrix", path, "--run", "watched", "--wait", "--timeout", "60s")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := ciRun(t, f.args("runs", "watch", "watched", "--timeout", "60s")...)
	if code != ExitOK {
		t.Fatalf("runs watch: exit %d\n%s%s", code, out, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(first, "3/3 done (3 passed, 0 failed)") || strings.Contains(out, "queued") && strings.Contains(out, "1/3 done") {
		t.Fatalf("runs watch of a finished run, first line %q; output:\n%s", first, out)
	}
}

// A wait that times out calls its unfinished jobs
// unfinished (table, gate line, Markdown), the Markdown heading says TIMED
// OUT as the exit code 3 does, and the "no live worker serves pool"
// warning is in the summary too.
func TestTimedOutWaitSaysUnfinished(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1) // serves sim only: the cpu job never starts
	dir := t.TempDir()
	md, junit := filepath.Join(dir, "summary.md"), filepath.Join(dir, "junit.xml")
	code, out, errOut := ciRun(t, f.args("submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "2", "--loop-count", "4",
		"--run", "neverstarts", "--wait", "--timeout", "1s", "--gate", "--summary-md", md, "--junit", junit)...)
	if code != ExitTimeout {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "no live worker serves pool cpu") {
		t.Errorf("stderr lacks the warning: %q", errOut)
	}
	// The table and the gate line.
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "mlp") && strings.Contains(l, "cpu") {
			row = l
		}
	}
	if !strings.Contains(row, "unfinished") || strings.Contains(row, "failed") {
		t.Errorf("table row %q: want unfinished, not failed\n%s", row, out)
	}
	if !strings.Contains(out, "gate TIMED OUT: 0 regression(s), 0 failed, 1 unfinished") {
		t.Errorf("gate line: want TIMED OUT, 0 failed, 1 unfinished:\n%s", out)
	}
	if !strings.Contains(out, "1 job unfinished; the run goes on") {
		t.Errorf("no closing line naming the unfinished job:\n%s", out)
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{"## benchfleet run `neverstarts`: TIMED OUT", "**TIMED OUT**: 1 job, 0 passed, 0 failed, 1 unfinished",
		"no live worker serves pool cpu", "### Unfinished", "| unfinished | - | unfinished |"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"FAIL", "### Failures", "**failed**"} {
		if strings.Contains(s, bad) {
			t.Errorf("summary says %q of a run that timed out:\n%s", bad, s)
		}
	}
}

// A waiter reading another store than the worker's says
// so (stderr and the summary) once a job is reported ended and its result
// does not appear.
func TestWaitOnAnotherStoreSaysSo(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	other := t.TempDir()
	md := filepath.Join(t.TempDir(), "summary.md")
	args := append(f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "elsewhere",
		"--label", "sim.duration=1ms", "--wait", "--timeout", "10s", "--result-grace", "100ms", "--summary-md", md),
		"--store", "file://"+other) // the last --store wins
	code, out, errOut := ciRun(t, args...)
	if code != ExitTimeout {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"not in the store this command reads (file://" + other + ")", "may write its results to another store"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "may write its results to another store") {
		t.Errorf("summary lacks the store warning:\n%s", data)
	}
	// The worker's store has the result.
	if rs := fleettest.Results(t, f.store, "elsewhere"); len(rs) != 1 {
		t.Errorf("worker's store: %d results, want 1", len(rs))
	}
}

// Read-only commands fail on a file store that does not
// exist instead of creating it and finding nothing.
func TestReadOnlyCommandsNeedAnExistingFileStore(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, args := range [][]string{
		{"results", "query"},
		{"results", "report", "--out", filepath.Join(t.TempDir(), "r.html")},
		{"results", "gate", "--run", "somerun"},
		{"runs", "list"},
	} {
		code, out, errOut := ciRun(t, append(args, "--nats", f.url, "--store", "file://"+missing)...)
		if code != ExitUsage || !strings.Contains(errOut, missing+" does not exist") {
			t.Errorf("%v: exit %d, want 64 naming the folder\n%s%s", args, code, out, errOut)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%v created the store folder", args)
		}
	}
	// Writers still create it.
	if code, out, errOut := ciRun(t, "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--label", "sim.duration=1ms", "--nats", f.url, "--store", "file://"+missing, "--log-level", "warn"); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := ciRun(t, "results", "query", "--store", "file://"+missing); code != ExitOK {
		t.Fatalf("results query of the store submit made: exit %d\n%s%s", code, out, errOut)
	}
}

// A dead-lettered job leaves one error result (its
// reason and attempts), which results query --status error, results report
// and runs show count; a dlq retry's result replaces it, still one result.
func TestDeadLetterLeavesOneErrorResult(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	if code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "deadone", "--label", "sim.fail=transient", "--label", "sim.fail_attempts=4", "--label", "sim.duration=1ms")...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	query := func(status string) []protocol.Result {
		_, out, _ := ciRun(t, f.args("results", "query", "--run", "deadone", "--status", status, "--format", "json")...)
		var rs []protocol.Result
		_ = json.Unmarshal([]byte(out), &rs)
		return rs
	}
	var rs []protocol.Result
	fleettest.Eventually(t, 60*time.Second, "the dead letter's error result", func() bool {
		rs = query("error")
		return len(rs) > 0
	})
	if len(rs) != 1 {
		t.Fatalf("%d error results, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	if r.Attempt != 4 || r.Error == nil || r.Error.Class != protocol.ClassDeadLetter || !strings.Contains(r.Error.Message, "last of 4 attempts") {
		t.Fatalf("dead letter's result: attempt %d error %+v", r.Attempt, r.Error)
	}
	// One dead letter, one result, for the one job.
	fleettest.Eventually(t, 20*time.Second, "the dead letter", func() bool {
		_, out, _ := ciRun(t, f.args("dlq", "list", "--format", "json")...)
		return strings.Contains(out, r.Job)
	})
	if all := fleettest.Results(t, f.store, "deadone"); len(all) != 1 {
		t.Fatalf("%d results in the store, want 1", len(all))
	}
	code, out, errOut := ciRun(t, f.args("runs", "show", "deadone")...)
	if code != ExitOK || !strings.Contains(out, "error") || !strings.Contains(out, "1/1 done (0 passed, 1 failed)") {
		t.Errorf("runs show: exit %d\n%s%s", code, out, errOut)
	}
	report := filepath.Join(t.TempDir(), "report.html")
	if code, out, errOut := ciRun(t, f.args("results", "report", "--run", "deadone", "--out", report)...); code != ExitOK ||
		!strings.Contains(out, "wrote a report of 1 result ") {
		t.Fatalf("results report: exit %d\n%s%s", code, out, errOut)
	}
	if html, _ := os.ReadFile(report); !strings.Contains(string(html), "error") {
		t.Errorf("results report does not count the dead-lettered job as error")
	}

	// dlq retry: attempt 5 passes and its result replaces the dead letter's.
	if code, out, errOut := ciRun(t, f.args("dlq", "retry", r.Job)...); code != ExitOK {
		t.Fatalf("dlq retry: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = ciRun(t, f.args("runs", "watch", "deadone", "--timeout", "60s")...)
	if code != ExitOK || !strings.Contains(out, "passed") {
		t.Fatalf("runs watch after dlq retry: exit %d\n%s%s", code, out, errOut)
	}
	if p := query("passed"); len(p) != 1 || p[0].Attempt != 5 {
		t.Fatalf("after dlq retry: %+v, want one passed result of attempt 5", p)
	}
	if e := query("error"); len(e) != 0 {
		t.Fatalf("after dlq retry the dead letter's result is still counted: %+v", e)
	}
}
