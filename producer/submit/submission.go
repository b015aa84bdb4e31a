package submit

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
)

// ErrInvalidOptions is wrapped by every error of SubmitOptions.Validate and
// SubmitOptions.Submission: an option, the matrix file or a wheel file is
// wrong (the command line's usage error). The message names the option as
// the command line spells it (--batch-size), since that is what was typed.
var ErrInvalidOptions = errors.New("invalid submit options")

type optionsError struct{ error }

func (e optionsError) Is(target error) bool { return target == ErrInvalidOptions }
func (e optionsError) Unwrap() error        { return e.error }

func invalid(format string, args ...any) error { return optionsError{fmt.Errorf(format, args...)} }

// SubmitOptions is what a submit asks for: a matrix file, or one job from
// its fields, and the overrides of either. The zero value of a field is
// unset: the matrix's value (or the job's default) stands.
type SubmitOptions struct {
	// MatrixFile is a matrix YAML file (ParseMatrix), or Matrix one parsed
	// already (not changed); either excludes Pool, Test, Model, BatchSize
	// and LoopCount.
	MatrixFile string
	Matrix     *Matrix
	// Pool and Benchmark.Model are required without a matrix, and so are
	// Benchmark.BatchSize and Benchmark.LoopCount; Runner defaults by pool.
	Pool, Runner string
	Benchmark    BenchmarkSpec
	// Labels are key=value job labels, added to the matrix's.
	Labels []string
	// Run is the run id; "" is the matrix's run, else derived (RunID).
	Run string
	// Priority is high, normal or low; "" is the matrix's, else high for a
	// run with a commit (someone is waiting on it) and normal otherwise.
	Priority string
	// JobTimeout is one attempt's limit (limits.timeout), 0 the worker's.
	JobTimeout time.Duration
	// PCCMin is the required PCC, 0 the job's default (0.99).
	PCCMin float64
	// Commit, Branch, Repo and Project are the source under test; they
	// override the matrix's source.
	Commit, Branch, Repo, Project string
	// CIRunID is the CI run submitting (a positive number), "" outside CI.
	// It is provenance, not part of the run: a re-run attaches to the run.
	CIRunID string
	// BuildWheels are wheel files (or patterns like dist/*.whl) to upload
	// and measure; WheelKeys wheels already in the store, by key. Either
	// needs Repo and the full Commit.
	BuildWheels, WheelKeys []string
	// Untrusted says the submission is the untrusted producer's (the
	// command line sets it when it connects as NATS user `untrusted`):
	// its run is named untrusted-<...> (a derived run id gets the prefix;
	// a given one without it is an error), so its jobs go to
	// BENCH_UNTRUSTED; its priority is normal unless given, and high is
	// an error (ErrUntrustedPriority) that names the rule.
	Untrusted bool
}

// ErrUntrustedPriority is matched (besides ErrInvalidOptions) by the
// error of an untrusted submission at high priority: the untrusted
// producer may publish only at normal and low priority
// (deploy/nats/accounts.conf), so the publish would be denied.
var ErrUntrustedPriority = errors.New("the untrusted producer submits at normal or low priority only")

// CIOptions are the options a GitHub Actions job's environment gives: the
// commit $GITHUB_SHA, branch $GITHUB_REF_NAME, repository
// $GITHUB_REPOSITORY and CI run $GITHUB_RUN_ID (the command line's flag
// defaults). getenv is os.Getenv or a test's map.
func CIOptions(getenv func(string) string) SubmitOptions {
	return SubmitOptions{Commit: getenv("GITHUB_SHA"), Branch: getenv("GITHUB_REF_NAME"), Repo: getenv("GITHUB_REPOSITORY"), CIRunID: getenv("GITHUB_RUN_ID")}
}

// Env is what a submission takes from the process making it. The zero Env
// reads no variable, names the submitter "unknown" and uses the clock.
type Env struct {
	// Getenv reads a variable (os.Getenv): $GITHUB_SERVER_URL and
	// $GITHUB_REPOSITORY make the CI run's link. Nil reads none.
	Getenv func(string) string
	// Submitter names who submits, as user@host; "" is "unknown".
	Submitter string
	// Now is when a fresh run id is made; zero is time.Now().
	Now time.Time
}

// ProcessEnv is this process's Env: its environment, user and host.
func ProcessEnv() Env {
	e := Env{Getenv: os.Getenv, Submitter: "unknown"}
	if u, err := user.Current(); err == nil && u.Username != "" {
		h, _ := os.Hostname()
		e.Submitter = u.Username + "@" + h
	}
	return e
}

func (e Env) get(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Validate checks the options without reading a file.
func (o *SubmitOptions) Validate() error {
	b := o.Benchmark
	if o.MatrixFile != "" && o.Matrix != nil {
		return invalid("give a matrix file or a parsed matrix, not both")
	}
	if o.MatrixFile != "" || o.Matrix != nil {
		if o.Pool != "" || b.Model != "" || b.Test != "" || b.BatchSize != 0 || b.LoopCount != 0 {
			return invalid("--matrix cannot be combined with --pool, --model, --test, --batch-size or --loop-count")
		}
	} else {
		if o.Pool == "" || b.Model == "" {
			return invalid("give --matrix FILE, or at least --pool and --model (see --help)")
		}
		for _, chk := range []struct {
			name string
			v    int
		}{{"--batch-size", b.BatchSize}, {"--loop-count", b.LoopCount}} {
			if chk.v == 0 {
				return invalid("%s is required (a positive integer)", chk.name)
			}
			if chk.v < 0 {
				return invalid("%s %d: must be a positive integer", chk.name, chk.v)
			}
		}
		if b.WarmupCount < 0 {
			return invalid("--warmup-count %d: must be a positive integer", b.WarmupCount)
		}
	}
	if o.Priority != "" && !protocol.Priority(o.Priority).Valid() {
		return invalid("--priority %q: want high, normal or low", o.Priority)
	}
	if o.JobTimeout < 0 || o.JobTimeout > protocol.MaxJobTimeout {
		return invalid("--job-timeout %s: must be between 0 and %s", o.JobTimeout, protocol.MaxJobTimeout)
	}
	if o.PCCMin < 0 || o.PCCMin > 1 {
		return invalid("--pcc-min %v: must be between 0 and 1", o.PCCMin)
	}
	for _, kv := range o.Labels {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return invalid("--label %q: want key=value", kv)
		}
	}
	if o.CIRunID != "" {
		if n, err := strconv.ParseInt(o.CIRunID, 10, 64); err != nil || n <= 0 {
			return invalid("--ci-run-id %q (env GITHUB_RUN_ID): want a positive number", o.CIRunID)
		}
	}
	return nil
}

// Submission turns the options into a validated run, reading the matrix
// file and hashing the wheel files, which it returns for StageWheels to
// upload before the run is submitted. Policy: a run with a commit and no
// priority runs high; without --run the run id is derived (RunID) from
// the source and the matrix, its wheels by name (runDigest), so a
// re-triggered CI job for the same commit attaches to its run even when it
// rebuilt the wheels with other bytes; the CI run (CIRunID, linked from
// env) is set on every job after that, as provenance.
func (o *SubmitOptions) Submission(env Env) (*Submission, []wheels.WheelFile, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	m, err := o.matrix()
	if err != nil {
		return nil, nil, err
	}
	specs, err := o.addWheels(m)
	if err != nil {
		return nil, nil, err
	}
	if o.Untrusted && m.Defaults.Priority == string(protocol.PriorityHigh) {
		return nil, nil, optionsError{fmt.Errorf("--priority high: %w (BENCH_UNTRUSTED has no high queue and deploy/nats/accounts.conf denies the user `untrusted` bench.*.*.high): give --priority normal or low, or none", ErrUntrustedPriority)}
	}
	if m.Defaults.Priority == "" && m.Source.Commit != "" && !o.Untrusted {
		m.Defaults.Priority = string(protocol.PriorityHigh)
	}
	run := cmp.Or(o.Run, m.Run)
	if o.Untrusted && run != "" && !protocol.UntrustedRun(run) {
		return nil, nil, invalid("--run %q: the untrusted producer's runs are named %s<...> (its only keys in bench-runs; deploy/nats/accounts.conf): give --run %s%s, or none to derive one",
			run, protocol.UntrustedRunPrefix, protocol.UntrustedRunPrefix, run)
	}
	if run == "" {
		digest, err := runDigest(m)
		if err != nil {
			return nil, nil, fmt.Errorf("submit: %w", err)
		}
		now := env.Now
		if now.IsZero() {
			now = time.Now()
		}
		run = RunID(m.Source, string(digest), now)
		if o.Untrusted {
			run = protocol.UntrustedRunPrefix + run
		}
	}
	if err := protocol.ValidID("run", run); err != nil {
		return nil, nil, invalid("--run: %v", err)
	}
	jobs, err := m.Jobs(run)
	if err != nil {
		return nil, nil, invalid("%v", err)
	}
	if err := CheckJobs(jobs); err != nil {
		return nil, nil, err
	}
	ci := ciSource(o.CIRunID, env)
	for _, j := range jobs {
		j.Source.CIRunID, j.Source.CIRunURL = ci.CIRunID, ci.CIRunURL
	}
	prio := protocol.Priority(cmp.Or(m.Defaults.Priority, string(protocol.PriorityNormal)))
	return &Submission{
		Run: run, Submitter: cmp.Or(env.Submitter, "unknown"), Priority: prio, Jobs: jobs, Labels: m.Labels,
		Source: protocol.Source{Project: m.Source.Project, Repo: m.Source.Repo, Commit: m.Source.Commit, Branch: m.Source.Branch,
			CIRunID: ci.CIRunID, CIRunURL: ci.CIRunURL, Wheels: jobs[0].Source.Wheels},
	}, specs, nil
}

// matrix reads the matrix file, or makes the one-job matrix, and applies
// the overrides.
func (o *SubmitOptions) matrix() (*Matrix, error) {
	m := &Matrix{Defaults: JobSpec{Pool: o.Pool, Runner: o.Runner, Benchmark: o.Benchmark}}
	if o.Matrix != nil {
		c := *o.Matrix
		c.Labels, c.Source.Wheels = maps.Clone(c.Labels), slices.Clone(c.Source.Wheels)
		m = &c
	}
	if o.MatrixFile != "" {
		data, err := os.ReadFile(o.MatrixFile)
		if err != nil {
			return nil, invalid("--matrix: %v", err)
		}
		if m, err = ParseMatrix(data); err != nil {
			return nil, invalid("--matrix %s: %v", o.MatrixFile, err)
		}
	}
	if o.Priority != "" {
		m.Defaults.Priority = o.Priority
	}
	if o.JobTimeout > 0 {
		m.Defaults.Limits.Timeout = o.JobTimeout.String()
	}
	if o.PCCMin != 0 {
		m.Defaults.Limits.PCCMin = o.PCCMin
	}
	for _, kv := range o.Labels {
		k, v, _ := strings.Cut(kv, "=")
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
	for _, f := range []struct {
		to *string
		v  string
	}{
		{&m.Source.Commit, o.Commit}, {&m.Source.Branch, o.Branch}, {&m.Source.Repo, o.Repo}, {&m.Source.Project, o.Project},
	} {
		if f.v != "" {
			*f.to = f.v
		}
	}
	return m, nil
}

// addWheels hashes the BuildWheels files, reads the WheelKeys and adds
// both to the matrix's source.wheels; a run with wheels needs a repository
// and a full commit. It returns the files hashed.
func (o *SubmitOptions) addWheels(m *Matrix) ([]wheels.WheelFile, error) {
	if len(o.BuildWheels) == 0 && len(o.WheelKeys) == 0 && len(m.Source.Wheels) == 0 && m.Source.Build.URL == "" {
		return nil, nil
	}
	if m.Source.Repo == "" {
		return nil, invalid("wheels (--build-wheel, --wheel, source.wheels) need --repo (default $GITHUB_REPOSITORY): the repository whose test tree at --commit runs with them")
	}
	if m.Source.Commit == "" {
		return nil, invalid("wheels (--build-wheel, --wheel, source.wheels) need --commit (default $GITHUB_SHA): the full 40-hex-digit commit for the worker to fetch the test tree of %s at",
			m.Source.Repo)
	}
	if !protocol.ValidCommit(m.Source.Commit) {
		return nil, invalid("--commit %q is not a full commit: wheels (--build-wheel, --wheel, source.wheels) need the full 40-hex-digit commit (lowercase; 64 digits in a SHA-256 repository) for the worker to fetch the test tree of %s at it, and a mirror cannot fetch an abbreviation",
			m.Source.Commit, m.Source.Repo)
	}
	var paths []string
	for _, p := range o.BuildWheels {
		if !strings.ContainsAny(p, "*?[") {
			paths = append(paths, p)
			continue
		}
		matches, err := filepath.Glob(p)
		if err != nil || len(matches) == 0 {
			return nil, invalid("--build-wheel %q: no file matches", p)
		}
		paths = append(paths, matches...)
	}
	var files []wheels.WheelFile
	seen := map[string]bool{}
	for _, p := range paths {
		wf, err := wheels.ReadWheelFile(p)
		if err != nil {
			return nil, invalid("--build-wheel: %v", err)
		}
		if !seen[wf.Key()] {
			seen[wf.Key()] = true
			files = append(files, wf)
		}
	}
	var specs []WheelSpec
	if b := m.Source.Build; b.URL != "" && (len(files) > 0 || len(o.WheelKeys) > 0) {
		// The one-wheel form joins the others (protocol.Job.Normalize).
		specs = append(specs, WheelSpec{URL: b.URL, SHA256: b.SHA256})
		m.Source.Build.URL, m.Source.Build.SHA256 = "", ""
	}
	for _, wf := range files {
		specs = append(specs, WheelSpec{URL: wf.Key(), SHA256: wf.SHA256})
	}
	for _, k := range o.WheelKeys {
		w, err := wheels.ParseWheelKey(k)
		if err != nil {
			return nil, invalid("--wheel: %v", err)
		}
		specs = append(specs, WheelSpec{URL: w.URL, SHA256: w.SHA256})
	}
	m.Source.Wheels = append(m.Source.Wheels, specs...)
	return files, nil
}

// ciSource is the GitHub Actions run submitting the jobs: its id and link
// ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/ID, the server
// github.com by default). Without an id both are empty. id was validated.
func ciSource(id string, env Env) protocol.Source {
	n, _ := strconv.ParseInt(id, 10, 64)
	if n <= 0 {
		return protocol.Source{}
	}
	src := protocol.Source{CIRunID: n}
	server, repo := cmp.Or(strings.TrimRight(env.get("GITHUB_SERVER_URL"), "/"), "https://github.com"), env.get("GITHUB_REPOSITORY")
	if repo != "" {
		src.CIRunURL = fmt.Sprintf("%s/%s/actions/runs/%d", server, repo, n)
	}
	return src
}

// CheckJobs asks each job's runner kind (device.CheckJob) whether it can
// run the job, so an unknown runner, an unknown cpu model, a bad size or a
// harness job without a test id is an ErrInvalidOptions error here rather
// than a dead letter later. What only a host knows (the checkout's tests)
// is checked by the worker. The kinds are those registered in the process
// (the benchfleet binary imports device/cpu, device/harness, device/sim).
func CheckJobs(jobs []*protocol.Job) error {
	for _, j := range jobs {
		if err := device.CheckJob(j); err != nil {
			reason := err.Error()
			var inv *device.InvalidError
			if errors.As(err, &inv) {
				reason = inv.Reason
			}
			return invalid("job %s: benchmark (pool %s, runner %s, model %q): %s", j.ID, j.Pool, j.Runner, j.Benchmark.Model, reason)
		}
	}
	return nil
}
