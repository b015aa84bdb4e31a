package submit_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/benchfleet/benchfleet/device/cpu"     // registers the cpu runner
	_ "github.com/benchfleet/benchfleet/device/harness" // registers forge, tt-xla
	_ "github.com/benchfleet/benchfleet/device/sim"     // registers the sim runner

	// registers the cpu runner
	"github.com/benchfleet/benchfleet/producer/submit"
	// registers forge, tt-xla
	// registers the sim runner
	"github.com/benchfleet/benchfleet/protocol"
)

// The example CI matrices parse and expand; with a commit the CI matrix
// runs at high priority (the default) and the nightly at low (its own);
// the run id is derived from the commit, the same on a re-run.
func TestDeployCIMatrices(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "deploy", "ci")
	for _, tc := range []struct {
		file string
		prio protocol.Priority
	}{{"matrix-ci.yaml", protocol.PriorityHigh}, {"matrix-nightly.yaml", protocol.PriorityLow}} {
		o := submit.SubmitOptions{MatrixFile: filepath.Join(root, tc.file), Commit: "0123456789abcdef", Branch: "main", Repo: "acme/fleet"}
		sub, _, err := o.Submission(submit.Env{})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if sub.Priority != tc.prio || len(sub.Jobs) == 0 || sub.Jobs[0].Priority != tc.prio {
			t.Errorf("%s: priority %s with %d jobs, want %s", tc.file, sub.Priority, len(sub.Jobs), tc.prio)
		}
		again, _, err := o.Submission(submit.Env{Now: time.Now().Add(time.Hour)})
		if err != nil || again.Run != sub.Run || !strings.HasPrefix(sub.Run, "ci-fleet-0123456789ab-") {
			t.Errorf("%s: run ids %q and %q, want one derived from the commit", tc.file, sub.Run, again.Run)
		}
		// An explicit priority wins over the CI default.
		o.Priority = "normal"
		if sub, _, err := o.Submission(submit.Env{}); err != nil || sub.Priority != protocol.PriorityNormal {
			t.Errorf("%s with --priority normal: %v %v", tc.file, sub, err)
		}
	}
	// Without a commit the default stays normal.
	o := submit.SubmitOptions{Pool: "sim", Benchmark: submit.BenchmarkSpec{Model: "m", BatchSize: 1, LoopCount: 1}}
	sub, _, err := o.Submission(submit.Env{})
	if err != nil || sub.Priority != protocol.PriorityNormal {
		t.Errorf("no commit: %v %v, want normal priority", sub, err)
	}
}

// The CI run comes from the options and its link from the environment
// passed in; it is provenance on every job, not part of the run id.
func TestSubmissionCIProvenance(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GITHUB_SHA": "abc123", "GITHUB_REF_NAME": "main", "GITHUB_REPOSITORY": "acme/fleet", "GITHUB_RUN_ID": "42",
		"GITHUB_SERVER_URL": "https://ghe.example/"}
	o := submit.CIOptions(func(k string) string { return env[k] })
	if o.Commit != "abc123" || o.Branch != "main" || o.Repo != "acme/fleet" || o.CIRunID != "42" {
		t.Fatalf("CIOptions = %+v", o)
	}
	o.Pool, o.Benchmark = "sim", submit.BenchmarkSpec{Model: "m", BatchSize: 1, LoopCount: 1}
	sub, _, err := o.Submission(submit.Env{Getenv: func(k string) string { return env[k] }, Submitter: "ci@runner"})
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://ghe.example/acme/fleet/actions/runs/42"
	if sub.Source.CIRunID != 42 || sub.Source.CIRunURL != url || sub.Jobs[0].Source.CIRunURL != url || sub.Submitter != "ci@runner" {
		t.Errorf("source %+v, job source %+v, submitter %q", sub.Source, sub.Jobs[0].Source, sub.Submitter)
	}
	o.CIRunID = "43"
	other, _, err := o.Submission(submit.Env{})
	if err != nil || other.Run != sub.Run || other.Source.CIRunURL != "" {
		t.Errorf("another CI run of the same commit: run %q (want %q), url %q, %v", other.Run, sub.Run, other.Source.CIRunURL, err)
	}
}

// Bad options are ErrInvalidOptions errors naming the option.
func TestSubmitOptionsValidate(t *testing.T) {
	t.Parallel()
	one := func(edit func(*submit.SubmitOptions)) submit.SubmitOptions {
		o := submit.SubmitOptions{Pool: "sim", Benchmark: submit.BenchmarkSpec{Model: "m", BatchSize: 1, LoopCount: 1}}
		edit(&o)
		return o
	}
	for _, tc := range []struct {
		name string
		o    submit.SubmitOptions
		want string
	}{
		{"nothing", submit.SubmitOptions{}, "--matrix FILE"},
		{"matrix and pool", submit.SubmitOptions{MatrixFile: "m.yaml", Pool: "sim"}, "--matrix cannot"},
		{"no batch", one(func(o *submit.SubmitOptions) { o.Benchmark.BatchSize = 0 }), "--batch-size is required"},
		{"negative loop", one(func(o *submit.SubmitOptions) { o.Benchmark.LoopCount = -1 }), "--loop-count -1"},
		{"negative warmup", one(func(o *submit.SubmitOptions) { o.Benchmark.WarmupCount = -1 }), "--warmup-count"},
		{"priority", one(func(o *submit.SubmitOptions) { o.Priority = "urgent" }), "--priority"},
		{"job timeout", one(func(o *submit.SubmitOptions) { o.JobTimeout = -time.Second }), "--job-timeout"},
		{"pcc", one(func(o *submit.SubmitOptions) { o.PCCMin = 2 }), "--pcc-min"},
		{"label", one(func(o *submit.SubmitOptions) { o.Labels = []string{"k"} }), "--label"},
		{"ci run", one(func(o *submit.SubmitOptions) { o.CIRunID = "x" }), "--ci-run-id"},
		{"wheel without repo", one(func(o *submit.SubmitOptions) { o.WheelKeys = []string{"k"} }), "--repo"},
		{"bad run", one(func(o *submit.SubmitOptions) { o.Run = "../x" }), "--run"},
		{"unknown cpu model", submit.SubmitOptions{Pool: "cpu", Benchmark: submit.BenchmarkSpec{Model: "nope", BatchSize: 1, LoopCount: 1}}, "model"},
		{"matrix missing", submit.SubmitOptions{MatrixFile: filepath.Join(t.TempDir(), "none.yaml")}, "--matrix"},
	} {
		_, _, err := tc.o.Submission(submit.Env{})
		if !errors.Is(err, submit.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an ErrInvalidOptions naming %q", tc.name, err, tc.want)
		}
	}
	good := one(func(*submit.SubmitOptions) {})
	if err := good.Validate(); err != nil {
		t.Errorf("good options: %v", err)
	}
}
