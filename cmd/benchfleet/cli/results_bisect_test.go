package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A bisect over 16 commits on real workers: a real git repository of 17
// commits (the good one and 16 after it), the forge wheel of every commit
// stored as CI stores it, the 11th and later built slower (20 ms an
// iteration, not 10), and a forge worker running the upstream-shaped
// harness under Debian's pytest. The bisect names the 11th commit in at
// most 5 rounds (log2(16) + 1), skipping and reporting the two commits CI
// stored no build of. With the 11th's build record gone it cannot tell
// the 11th from the 12th: it says so, naming both, and exits 1.
func TestBisectNamesThePlantedCommit(t *testing.T) {
	t.Parallel()
	b := newBuildFarm(t, 10, 20) // the fast and the slow build's wheels
	// The farm's repository, as the worker's mirror source, is replaced by
	// one of 17 commits.
	commits := []map[string]string{harnesstest.Files(t, "forge", "checkout")}
	for i := 1; i <= 16; i++ {
		commits = append(commits, map[string]string{"CHANGES.md": fmt.Sprintf("commit %d of the range\n", i)})
	}
	repo, ids := buildtest.Repo(t, commits...)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, b.cfg, strings.Replace(string(cfg), b.repo, repo, 1))
	good, bad, first := ids[0], ids[16], ids[11]
	build := func(i int) []string { // the 11th commit of the range (ids[11]) is the first slow one
		if i >= 11 {
			return b.wheels[1]
		}
		return b.wheels[0]
	}
	noBuild := map[int]bool{4: true, 14: true}

	// CI: the good and the bad commits measured on the farm (the series'
	// history, the regression at bad), their wheels uploaded by submit.
	startWorkerBinary(t, b.cfg, b.tmp)
	for _, i := range []int{0, 16} {
		args := []string{"--repo", forgeRepo, "--commit", ids[i], "--branch", "main"}
		for _, w := range build(i) {
			args = append(args, "--build-wheel", w)
		}
		if code, out := b.submit(t, fmt.Sprintf("ci-%d", i), args...); code != 0 {
			t.Fatalf("CI's run of commit %d: exit %d\n%s", i, code, out)
		}
	}
	// The commits between: their wheels as CI's submit stored them
	// (StageWheels, the submit path), their runs not repeated here.
	store, err := file.NewBucket(strings.TrimPrefix(b.store, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := 1; i < 16; i++ {
		if noBuild[i] {
			continue
		}
		var files []wheels.WheelFile
		job := &protocol.Job{ID: fmt.Sprintf("ci-%d", i), Source: protocol.Source{Repo: forgeRepo, Commit: ids[i], Branch: "main"}}
		for _, w := range build(i) {
			wf, err := wheels.ReadWheelFile(w)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, wf)
			job.Source.Wheels = append(job.Source.Wheels, wf.Wheel())
		}
		if err := wheels.StageWheels(t.Context(), store, files, []*protocol.Job{job}, "main", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wheels.ReadBuildRecord(t.Context(), store, bad); err != nil {
		t.Fatalf("CI's submit --build-wheel of the bad commit recorded no build: %v", err)
	}

	bisect := []string{"results", "bisect", "--nats", b.nats, "--store", b.store, "--model", "resnet50", "--batch-size", "2", "--data-format", "bfloat16",
		"--pool", "n150", "--good", good[:10], "--bad", bad[:10], "--mirror", repo, "--log-level", "warn"}
	code, out, errOut := run2(t, bisect...)
	t.Logf("bisect: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("bisect: exit %d, want 0", code)
	}
	if want := fmt.Sprintf("first bad commit: %s (11 of 16) ", first); !strings.Contains(out, want) || !strings.Contains(out, ", its parent "+ids[10][:12]) {
		t.Fatalf("bisect printed no %q", want)
	}
	rounds := regexp.MustCompile(`(?m)^round (\d+)/(\d+): `).FindAllStringSubmatch(errOut, -1)
	if len(rounds) == 0 || len(rounds) > 5 || rounds[len(rounds)-1][1] != fmt.Sprint(len(rounds)) || !strings.Contains(out, fmt.Sprintf("%d rounds for 16 commits", len(rounds))) {
		t.Fatalf("%d rounds %v, want at most 5, numbered, and the count on stdout", len(rounds), rounds)
	}
	for _, i := range []int{4, 14} {
		if want := fmt.Sprintf("skipped %s (%d of 16): no stored build\n", ids[i], i); !strings.Contains(out, want) {
			t.Fatalf("bisect did not report %q", want)
		}
	}
	// Every measured commit ran 3 attempts (2 confirmation repeats) on its
	// own build, and the slow builds measured slower.
	var measured []protocol.Result
	for _, r := range queryAll(t, b.store) {
		if r.Labels["bisect"] == "true" {
			measured = append(measured, r)
		}
	}
	perCommit := map[string]int{}
	for _, r := range measured {
		if r.Status != protocol.StatusPassed || r.Build == nil || r.Build.Kind != protocol.BuildProvisioned || r.Build.Commit != r.Source.Commit {
			t.Fatalf("bisect job %s: %s build %+v, want passed on its commit's build", r.Job, r.Status, r.Build)
		}
		perCommit[r.Source.Commit]++
	}
	if len(perCommit) != len(rounds)+1 {
		t.Fatalf("bisect measured %d commits, want %d (both ends, a commit a round after)", len(perCommit), len(rounds)+1)
	}
	for c, n := range perCommit {
		if n != 3 {
			t.Fatalf("commit %s: %d attempts, want 3", c, n)
		}
	}

	// The first bad commit's build record gone: it cannot be told from the
	// 12th, and the bisect says so (reusing the runs it made).
	if err := store.Delete(t.Context(), wheels.BuildRecordKey(first)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run2(t, bisect...)
	t.Logf("bisect without the 11th's build: exit %d\n%s%s", code, out, errOut)
	if code != 1 {
		t.Fatalf("bisect without the first bad commit's build: exit %d, want 1", code)
	}
	for _, want := range []string{"first bad commit: one of 2 commits", first + " (11 of 16) skipped: no stored build\n", ids[12] + " (12 of 16) bad, "} {
		if !strings.Contains(out, want) {
			t.Fatalf("bisect without the 11th's build printed no %q", want)
		}
	}
	if !strings.Contains(errOut, "could not be measured") {
		t.Fatalf("bisect without the 11th's build: no error saying why on stderr")
	}
	if n := len(queryAll(t, b.store)); n != len(measured)+2 {
		t.Fatalf("%d results after the second bisect, want the %d of the first and CI's 2: its runs are reused", n, len(measured))
	}

	// Two slow commits: nothing to bisect, and the bisect stops after
	// round 1 saying so (exit 1).
	slow := append(slices.Clone(bisect), "--good", ids[12], "--repeats", "0")
	code, out, errOut = run2(t, slow...)
	t.Logf("bisect of two slow commits: exit %d\n%s%s", code, out, errOut)
	if code != 1 || !strings.Contains(errOut, "the regression does not reproduce") || !strings.Contains(out, "first bad commit: not found") ||
		strings.Count(errOut, "round ") != 1 {
		t.Fatalf("bisect of two slow commits: exit %d, want 1 after one round saying the regression does not reproduce", code)
	}
}

// Bad input is a usage error naming what is wrong, before anything is
// connected to.
func TestBisectUsageErrors(t *testing.T) {
	t.Parallel()
	list := filepath.Join(t.TempDir(), "commits")
	writeFile(t, list, strings.Repeat("a", 40)+"\n"+strings.Repeat("b", 40)+"\n")
	series := []string{"results", "bisect", "--nats", "nats://127.0.0.1:1", "--store", "file://" + t.TempDir(), "--model", "resnet50", "--batch-size", "8", "--pool", "n150"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--good", "aaaa", "--bad", "bbbb"}, "give --mirror DIR"},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--commits", list, "--mirror", "x"}, "give one of --mirror DIR or --commits FILE, not both"},
		{[]string{"--bad", "bbbb", "--commits", list}, "--good is required"},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--mirror", filepath.Join(t.TempDir(), "none")}, "none: no such folder"},
		{[]string{"--good", "bbbb", "--bad", "aaaa", "--commits", list}, "no commits between"},
		{[]string{"--good", "aaaa", "--bad", "cccc", "--commits", list}, `--bad "cccc": not in the list`},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--commits", list, "--threshold", "much"}, "--threshold"},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--commits", list, "--batch-size", "0"}, "--batch-size 0: want a positive batch size"},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--commits", list, "--batch-size", "8", "--data-format", "bf16"}, `--data-format "bf16": want float32 or bfloat16`},
		{[]string{"--good", "aaaa", "--bad", "bbbb", "--commits", list, "--batch-size", "8", "--data-format", ""}, "the series needs --model, --batch-size, --data-format and --pool"},
	} {
		code, _, errOut := run2(t, append(slices.Clone(series), c.args...)...)
		if code != 64 || !strings.Contains(errOut, c.want) {
			t.Errorf("bisect %v: exit %d %q, want 64 saying %q", c.args, code, errOut, c.want)
		}
	}
}

// A bisect of a sim series, as a user meets it: the series' results are
// stored, no build records (sim installs no wheels, so CI records none).
// The bisect is refused as the help promises, exit 64 naming the runner,
// before a build record is looked for, and nothing is queued.
func TestBisectRefusesASimSeriesWithoutBuildRecords(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	good, bad := strings.Repeat("a", 40), strings.Repeat("b", 40)
	now := time.Now().UTC()
	for i, c := range []string{good, bad} {
		run := fmt.Sprintf("ci-%d", i)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID(run, "simnet"), Run: run, RunCreatedAt: now, Pool: "sim", Runner: "sim",
			Status: protocol.StatusPassed, Attempt: 1, StartedAt: now, FinishedAt: now.Add(time.Second),
			Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 4, LoopCount: 10, WarmupCount: 4, DataFormat: "bfloat16"},
			Source:    protocol.Source{Repo: "o/r", Commit: c, Branch: "main"}, Measurements: protocol.Measurements{SamplesPerSec: 100 - 20*float64(i)}}
		if _, err := storage.PutResult(t.Context(), f.Store, r); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(t.TempDir(), "commits")
	writeFile(t, list, good+"\n"+bad+"\n")
	code, out, errOut := run2(t, "results", "bisect", "--nats", f.URL, "--store", f.StoreURL, "--model", "simnet", "--batch-size", "4", "--pool", "sim",
		"--good", good[:8], "--bad", bad[:8], "--commits", list, "--timeout", "20s", "--log-level", "warn")
	t.Logf("bisect of a sim series: exit %d\n%s%s", code, out, errOut)
	if code != 64 || !strings.Contains(errOut, "the sim runner") || !strings.Contains(errOut, "installs no wheels") || strings.Contains(errOut, "no stored build") {
		t.Fatalf("bisect of a sim series: exit %d\n%s%s\nwant 64 saying the sim runner installs no wheels", code, out, errOut)
	}
	st, err := f.JS.Stream(t.Context(), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Fatalf("jobs queued after a refused bisect: %+v %v, want none", info.State, err)
	}
}

// Every flag's value is checked before the disk or git is touched: with
// a --mirror that is not a git repository, a bad flag is what is
// reported, not the mirror.
func TestBisectChecksFlagsBeforeTheMirror(t *testing.T) {
	t.Parallel()
	notGit := t.TempDir()
	ok := map[string]string{"--model": "resnet50", "--batch-size": "8", "--pool": "n150", "--good": "aaaa", "--bad": "bbbb"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data-format", "bf16"}, `--data-format "bf16": want float32 or bfloat16`},
		{[]string{"--model", ""}, "the series needs --model, --batch-size, --data-format and --pool"},
		{[]string{"--pool", ""}, "the series needs --model, --batch-size, --data-format and --pool"},
		{[]string{"--pool", "n999"}, `--pool "n999": want one of`},
		{[]string{"--batch-size", "0"}, "--batch-size 0: want a positive batch size"},
		{[]string{"--repeats", "99"}, "--repeats 99: want 0 to"},
		{[]string{"--threshold", "much"}, "--threshold"},
		{[]string{"--good", ""}, "--good is required"},
		{[]string{"--bad", ""}, "--bad is required"},
		{[]string{"--good", "HEAD~3"}, `--good "HEAD~3": want a commit in lowercase hex`},
	} {
		args := []string{"results", "bisect", "--nats", "nats://127.0.0.1:1", "--store", "file://" + t.TempDir(), "--mirror", notGit}
		for _, f := range []string{"--model", "--batch-size", "--pool", "--good", "--bad"} {
			if !slices.Contains(c.args, f) {
				args = append(args, f, ok[f])
			}
		}
		code, _, errOut := run2(t, append(args, c.args...)...)
		if code != 64 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "not a git repository") {
			t.Errorf("bisect --mirror %s %v: exit %d %q, want 64 saying %q", notGit, c.args, code, errOut, c.want)
		}
	}
	// The flags all right, the mirror is what is wrong.
	args := []string{"results", "bisect", "--nats", "nats://127.0.0.1:1", "--store", "file://" + t.TempDir(), "--mirror", notGit}
	for f, v := range ok {
		args = append(args, f, v)
	}
	if code, _, errOut := run2(t, args...); code != 64 || !strings.Contains(errOut, "not a git repository") {
		t.Errorf("bisect --mirror %s: exit %d %q, want 64 saying it is not a git repository", notGit, code, errOut)
	}
}

// The help marks the flags a bisect cannot run without.
func TestBisectHelpMarksRequiredFlags(t *testing.T) {
	t.Parallel()
	code, out, errOut := run2(t, "results", "bisect", "--help")
	if code != 0 {
		t.Fatalf("results bisect --help: exit %d %s", code, errOut)
	}
	for _, f := range []string{"--model", "--batch-size", "--pool", "--good", "--bad"} {
		line := regexp.MustCompile(`(?m)^\s+` + f + ` (string|int)\s.*$`).FindString(out)
		if !strings.Contains(line, "required") {
			t.Errorf("results bisect --help: the %s line %q does not say it is required", f, line)
		}
	}
}

func queryAll(t *testing.T, store string) []protocol.Result {
	t.Helper()
	code, stdout, stderr := run2(t, "results", "query", "--store", store, "--format", "json")
	if code != 0 {
		t.Fatalf("results query: exit %d: %s", code, stderr)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return rs
}
