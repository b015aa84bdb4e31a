package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

type submitFlags struct {
	matrix      string
	pool        string
	runner      string
	test        string
	model       string
	batchSize   int
	loopCount   int
	warmupCount int
	dataFormat  string
	inputSize   int
	labels      []string
	run         string
	priority    string
	jobTimeout  time.Duration
	pccMin      float64
	wait        bool
	timeout     time.Duration
	junit       string
	summaryMD   string
	gate        bool
	commit      string
	branch      string
	repo        string
	project     string
	ciRunID     string
	buildWheels []string             // --build-wheel files and patterns
	wheelKeys   []string             // --wheel store keys
	wheelFiles  []producer.WheelFile // the --build-wheel files, hashed by buildSubmission
	gateFlags   gateFlags
	notify      notifyFlags
}

func (a *app) submitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit (--matrix FILE | --pool P --model M --batch-size N --loop-count N ...)",
		Short: "Submit a run of benchmark jobs (idempotent), optionally wait for its verdict",
		Long: `Submit a run: one job from flags, or a matrix file that multiplies out.

Job ids are derived from the run and each matrix cell, so submitting the
same run again publishes nothing new and re-attaches to it.

CI: with a commit (--commit, default $GITHUB_SHA) and no --run, the run id
is derived from the repository, the commit and the matrix, so a re-triggered
CI job for the same commit re-attaches to its run (and waits for it) instead
of running it twice; pass --run to force a fresh run. A run with a commit
and no priority (neither --priority nor the matrix's defaults.priority)
runs at high priority; nightly sweeps set priority: low in their matrix.

With --wait and a store (--store), the reports (--junit, --summary-md) show
each job's change against its baseline; --gate also makes a regression fail
the run (exit 2). ` + gateHelp + `

With --gate: ` + notifyHelp + `

` + wheelFlagsHelp + `

Exit codes: 0 every job passed (and, with --gate, no regression); 1 a job
failed — also when another job regressed; 2 the regression gate tripped; 3
timed out waiting; 64 bad flag or input; 69 NATS or JetStream could not be
reached (a cluster electing a leader is retried for 30 s first).`,
		Example: `  benchfleet submit --pool cpu --model mlp --batch-size 8 --loop-count 32 --wait
  benchfleet submit --matrix nightly.yaml --priority low
  benchfleet submit --matrix ci.yaml --commit $GITHUB_SHA --wait --gate --junit report.xml --summary-md $GITHUB_STEP_SUMMARY
  benchfleet submit --matrix perf.yaml --build-wheel dist/*.whl --wait --gate`,
		Args: submitArgs(&f),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runSubmit(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.matrix, "matrix", "", "matrix YAML file (run, source, defaults, matrix, exclude)")
	fl.StringVar(&f.pool, "pool", "", "board kind the job needs: "+strings.Join(protocol.Pools, ", "))
	fl.StringVar(&f.runner, "runner", "", "runner: "+strings.Join(device.KindNames(), ", ")+" (default: by pool)")
	fl.StringVar(&f.test, "test", "", "pytest node id for a harness runner, e.g. 'forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]'")
	fl.StringVar(&f.model, "model", "", "model name, e.g. resnet50, mlp")
	fl.IntVar(&f.batchSize, "batch-size", 0, "batch size (positive)")
	fl.IntVar(&f.loopCount, "loop-count", 0, "timed iterations (positive)")
	fl.IntVar(&f.warmupCount, "warmup-count", 0, "warmup iterations (default min(32, loop count))")
	fl.StringVar(&f.dataFormat, "data-format", "", "float32 or bfloat16 (default bfloat16)")
	fl.IntVar(&f.inputSize, "input-size", 0, "input spatial size (0 = the model's default)")
	fl.StringArrayVar(&f.labels, "label", nil, "job label k=v (repeatable)")
	fl.StringVar(&f.run, "run", "", "run id (default: derived from --commit, else fresh)")
	fl.StringVar(&f.priority, "priority", "", "high, normal or low (default normal)")
	fl.DurationVar(&f.jobTimeout, "job-timeout", 0, "limit of one attempt (limits.timeout); default the worker's")
	fl.Float64Var(&f.pccMin, "pcc-min", 0, "required PCC (default 0.99)")
	fl.BoolVar(&f.wait, "wait", false, "wait for the run and print its results")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Hour, "with --wait: give up after this long (exit 3)")
	fl.StringVar(&f.junit, "junit", "", "with --wait: write a JUnit XML report here")
	fl.StringVar(&f.summaryMD, "summary-md", "", "with --wait: write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)")
	fl.BoolVar(&f.gate, "gate", false, "with --wait: apply the regression gate (exit 2 on a regression; needs --store)")
	fl.StringVar(&f.commit, "commit", os.Getenv("GITHUB_SHA"), "source commit (env GITHUB_SHA)")
	fl.StringVar(&f.branch, "branch", os.Getenv("GITHUB_REF_NAME"), "source branch (env GITHUB_REF_NAME)")
	fl.StringVar(&f.repo, "repo", os.Getenv("GITHUB_REPOSITORY"), "source repository (env GITHUB_REPOSITORY)")
	fl.StringVar(&f.project, "project", "", "source project, e.g. tt-forge/tt-forge-onnx")
	fl.StringVar(&f.ciRunID, "ci-run-id", os.Getenv("GITHUB_RUN_ID"), "the CI run submitting (env GITHUB_RUN_ID); exports link it")
	fl.StringArrayVar(&f.buildWheels, "build-wheel", nil, "wheel file (or pattern like 'dist/*.whl') to upload to the store and measure (repeatable; needs --repo, a full --commit and --store)")
	fl.StringArrayVar(&f.wheelKeys, "wheel", nil, "wheel already in the store to measure, by its key builds/sha256/<hex>/<name>.whl (repeatable)")
	f.gateFlags.register(fl)
	f.gateFlags.registerConfirm(fl)
	f.notify.register(fl)
	a.topologyFlags(cmd)
	return cmd
}

// buildSubmission turns flags (and the matrix file) into a validated run.
// Every error here is a usage error naming the flag or field.
func (a *app) buildSubmission(f *submitFlags) (*producer.Submission, error) {
	var m *producer.Matrix
	if f.matrix != "" {
		if f.pool != "" || f.model != "" || f.test != "" || f.batchSize != 0 || f.loopCount != 0 {
			return nil, usageErr("--matrix cannot be combined with --pool, --model, --test, --batch-size or --loop-count")
		}
		data, err := os.ReadFile(f.matrix)
		if err != nil {
			return nil, usageErr("--matrix: %v", err)
		}
		m, err = producer.ParseMatrix(data)
		if err != nil {
			return nil, usageErr("--matrix %s: %v", f.matrix, err)
		}
	} else {
		if f.pool == "" || f.model == "" {
			return nil, usageErr("give --matrix FILE, or at least --pool and --model (see --help)")
		}
		m = &producer.Matrix{Defaults: producer.JobSpec{
			Pool: f.pool, Runner: f.runner,
			Benchmark: producer.BenchmarkSpec{Test: f.test, Model: f.model, BatchSize: f.batchSize, LoopCount: f.loopCount,
				WarmupCount: f.warmupCount, DataFormat: f.dataFormat, InputSize: f.inputSize},
		}}
		for _, chk := range []struct {
			name string
			v    int
		}{{"--batch-size", f.batchSize}, {"--loop-count", f.loopCount}} {
			if chk.v == 0 {
				return nil, usageErr("%s is required (a positive integer)", chk.name)
			}
			if chk.v < 0 {
				return nil, usageErr("%s %d: must be a positive integer", chk.name, chk.v)
			}
		}
		if f.warmupCount < 0 {
			return nil, usageErr("--warmup-count %d: must be a positive integer", f.warmupCount)
		}
	}
	// Flags override the file.
	if f.priority != "" {
		if !protocol.Priority(f.priority).Valid() {
			return nil, usageErr("--priority %q: want high, normal or low", f.priority)
		}
		m.Defaults.Priority = f.priority
	}
	if f.jobTimeout < 0 || f.jobTimeout > protocol.MaxJobTimeout {
		return nil, usageErr("--job-timeout %s: must be between 0 and %s", f.jobTimeout, protocol.MaxJobTimeout)
	}
	if f.jobTimeout > 0 {
		m.Defaults.Limits.Timeout = f.jobTimeout.String()
	}
	if f.pccMin != 0 {
		if f.pccMin < 0 || f.pccMin > 1 {
			return nil, usageErr("--pcc-min %v: must be between 0 and 1", f.pccMin)
		}
		m.Defaults.Limits.PCCMin = f.pccMin
	}
	for _, kv := range f.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr("--label %q: want key=value", kv)
		}
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
	if f.commit != "" {
		m.Source.Commit = f.commit
	}
	if f.branch != "" {
		m.Source.Branch = f.branch
	}
	if f.repo != "" {
		m.Source.Repo = f.repo
	}
	if f.project != "" {
		m.Source.Project = f.project
	}
	if err := addWheels(f, m); err != nil {
		return nil, err
	}
	if m.Defaults.Priority == "" && m.Source.Commit != "" {
		// CI for one commit: someone is waiting on it.
		m.Defaults.Priority = string(protocol.PriorityHigh)
	}
	run := f.run
	if run == "" {
		run = m.Run
	}
	if run == "" {
		digest, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		run = producer.RunID(m.Source, string(digest), time.Now())
	}
	if err := protocol.ValidID("run", run); err != nil {
		return nil, usageErr("--run: %v", err)
	}
	jobs, err := m.Jobs(run)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if err := checkBuiltin(jobs); err != nil {
		return nil, err
	}
	ci, err := ciSource(f.ciRunID)
	if err != nil {
		return nil, err
	}
	// The CI run is provenance, not part of the matrix: it is set after the
	// run id is derived, so a re-run attaches to the same run.
	for _, j := range jobs {
		j.Source.CIRunID, j.Source.CIRunURL = ci.CIRunID, ci.CIRunURL
	}
	prio := protocol.Priority(m.Defaults.Priority)
	if prio == "" {
		prio = protocol.PriorityNormal
	}
	return &producer.Submission{
		Run: run, Submitter: submitter(), Priority: prio, Jobs: jobs, Labels: m.Labels,
		Source: protocol.Source{Project: m.Source.Project, Repo: m.Source.Repo, Commit: m.Source.Commit, Branch: m.Source.Branch,
			CIRunID: ci.CIRunID, CIRunURL: ci.CIRunURL, Wheels: jobs[0].Source.Wheels},
	}, nil
}

// ciSource is the GitHub Actions run submitting the jobs: its id (--ci-run-id,
// default $GITHUB_RUN_ID) and link ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/
// actions/runs/ID). Outside CI both are empty.
func ciSource(id string) (protocol.Source, error) {
	if id == "" {
		return protocol.Source{}, nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return protocol.Source{}, usageErr("--ci-run-id %q (env GITHUB_RUN_ID): want a positive number", id)
	}
	src := protocol.Source{CIRunID: n}
	server, repo := strings.TrimRight(os.Getenv("GITHUB_SERVER_URL"), "/"), os.Getenv("GITHUB_REPOSITORY")
	if server == "" {
		server = "https://github.com"
	}
	if repo != "" {
		src.CIRunURL = fmt.Sprintf("%s/%s/actions/runs/%d", server, repo, n)
	}
	return src, nil
}

func (a *app) runSubmit(cmd *cobra.Command, f *submitFlags) error {
	ctx := cmd.Context()
	if !f.wait && (f.junit != "" || f.summaryMD != "" || f.gate) {
		return usageErr("--junit, --summary-md and --gate need --wait")
	}
	if f.timeout <= 0 {
		return usageErr("--timeout %s: must be positive", f.timeout)
	}
	if f.wait && a.storeURL == "" {
		return usageErr("--wait needs --store (or BENCHFLEET_STORE): a job's verdict is its stored result, not an event")
	}
	if f.gate && a.storeURL == "" {
		return usageErr("--gate needs --store (or BENCHFLEET_STORE): the baseline history is read from the result store")
	}
	gateCfg, err := f.gateFlags.config()
	if err != nil {
		return err
	}
	if f.notify.url != "" && !f.gate {
		return usageErr("--notify needs --wait --gate")
	}
	if err := f.notify.check(); err != nil {
		return err
	}
	sub, err := a.buildSubmission(f)
	if err != nil {
		return err
	}
	if err := a.needsWheelStore(sub); err != nil {
		return err
	}
	// A commit status goes to the commit this process was given only.
	f.notify.repo, f.notify.commit = sub.Source.Repo, sub.Source.Commit
	tc, err := a.topologyConfig()
	if err != nil {
		return err
	}
	nc, js, err := a.connect(ctx, "benchfleet-submit")
	if err != nil {
		return err
	}
	defer nc.Close()
	topo, err := topology.Ensure(ctx, js, tc)
	if err != nil {
		return err
	}
	a.warnWorkerOnlyFlags(cmd)
	a.warnTopologyDrift(ctx, cmd, js, tc, submissionPools(sub))
	p := &producer.Submitter{JS: js, Topo: topo, Log: a.log}
	if a.storeURL != "" {
		if b, err := a.openStore(ctx); err == nil {
			p.Store = b
			defer b.Close()
		} else {
			return err
		}
	}
	if err := a.stageWheels(ctx, p.Store, f, sub); err != nil {
		return err
	}
	res, err := p.Submit(ctx, *sub)
	if err != nil {
		if errors.Is(err, protocol.ErrInvalid) || errors.Is(err, producer.ErrRunDiffers) {
			return usageErr("%v", err)
		}
		return err
	}
	if res.Attached {
		fmt.Fprintf(a.stdout, "run %s already submitted at %s (%s): re-attaching, nothing new published\n",
			res.Manifest.Run, res.Manifest.CreatedAt.Format(time.RFC3339), jobCount(len(res.Manifest.Jobs)))
	} else {
		fmt.Fprintf(a.stdout, "run %s: %s submitted (%d new)\n", res.Manifest.Run, jobCount(len(res.Manifest.Jobs)), res.Published)
	}
	warnings, said := a.warnUnserved(ctx, topo, res.Manifest)
	if !f.wait {
		fmt.Fprintf(a.stdout, "follow it with: benchfleet runs watch %s\n", res.Manifest.Run)
		return nil
	}
	return a.waitRun(ctx, &producer.Watcher{JS: js, Manifest: res.Manifest}, waitOptions{timeout: f.timeout, junit: f.junit, summaryMD: f.summaryMD, gate: f.gate, gateConfig: gateCfg, notify: &f.notify,
		warnings: warnings, serviceSaid: said})
}

// warnUnserved says on stderr which of the run's pools no board in service
// serves (no live worker has one, or all its boards are quarantined or
// their workers draining, each named with why): their jobs stay queued
// (and --wait keeps waiting) until one is. It returns the warnings, for
// the summary, and the pools' service it read, for the waiter.
func (a *app) warnUnserved(ctx context.Context, topo *topology.Handles, m *protocol.RunManifest) ([]string, []producer.PoolService) {
	fleet, err := producer.ReadFleet(ctx, topo.Workers)
	if err != nil {
		return nil, nil // a hint only
	}
	svc := producer.PoolsService(fleet, producer.RunPools(m.Jobs), time.Now())
	var warnings []string
	for _, s := range svc {
		if s.InService {
			continue
		}
		n := 0
		for _, j := range m.Jobs {
			if j.Pool == s.Pool {
				n++
			}
		}
		verb := "stay"
		if n == 1 {
			verb = "stays"
		}
		w := fmt.Sprintf("no live worker serves pool %s: its %s %s queued until one starts (see benchfleet fleet status)", s.Pool, jobCount(n), verb)
		if len(s.Out) > 0 {
			w = fmt.Sprintf("%s; its %s %s queued until one is back (see benchfleet fleet status)", s, jobCount(n), verb)
		}
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
		warnings = append(warnings, w)
	}
	return warnings, svc
}

// checkBuiltin asks each job's runner kind (device.CheckJob) whether it can
// run the job, so an unknown runner, an unknown cpu model, a bad size or a
// harness job without a test id is a usage error here rather than a dead
// letter later. What only a host knows (the checkout's tests) is checked
// by the worker.
func checkBuiltin(jobs []*protocol.Job) error {
	for _, j := range jobs {
		if err := device.CheckJob(j); err != nil {
			reason := err.Error()
			var inv *device.InvalidError
			if errors.As(err, &inv) {
				reason = inv.Reason
			}
			return usageErr("job %s: benchmark (pool %s, runner %s, model %q): %s", j.ID, j.Pool, j.Runner, j.Benchmark.Model, reason)
		}
	}
	return nil
}

func submitter() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		h, _ := os.Hostname()
		return u.Username + "@" + h
	}
	return "unknown"
}
