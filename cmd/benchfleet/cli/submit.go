package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

type submitFlags struct {
	opts      submit.SubmitOptions
	wait      bool
	timeout   time.Duration
	junit     string
	summaryMD string
	gate      bool
	gateFlags gateFlags
	notify    notifyFlags
}

func (a *app) submitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit (--matrix FILE | --pool P --model M --batch-size N --loop-count N ...)",
		Short: "Submit a run of benchmark jobs (idempotent), optionally wait for its verdict",
		Long: longHelp("submit") + gateHelp + `

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
	fl, o, ci := cmd.Flags(), &f.opts, submit.CIOptions(os.Getenv)
	fl.StringVar(&o.MatrixFile, "matrix", "", "matrix YAML file (run, source, defaults, matrix, exclude)")
	fl.StringVar(&o.Pool, "pool", "", "board kind the job needs: "+strings.Join(protocol.Pools, ", "))
	fl.StringVar(&o.Runner, "runner", "", "runner: "+strings.Join(device.KindNames(), ", ")+" (default: by pool)")
	fl.StringVar(&o.Benchmark.Test, "test", "", "pytest node id for a harness runner, e.g. 'forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]'")
	fl.StringVar(&o.Benchmark.Model, "model", "", "model name, e.g. resnet50, mlp")
	fl.IntVar(&o.Benchmark.BatchSize, "batch-size", 0, "batch size (positive)")
	fl.IntVar(&o.Benchmark.LoopCount, "loop-count", 0, "timed iterations (positive)")
	fl.IntVar(&o.Benchmark.WarmupCount, "warmup-count", 0, "warmup iterations (default min(32, loop count))")
	fl.StringVar(&o.Benchmark.DataFormat, "data-format", "", "float32 or bfloat16 (default bfloat16)")
	fl.IntVar(&o.Benchmark.InputSize, "input-size", 0, "input spatial size (0 = the model's default)")
	fl.StringArrayVar(&o.Labels, "label", nil, "job label k=v (repeatable)")
	fl.StringVar(&o.Run, "run", "", "run id (default: derived from --commit, else fresh)")
	fl.StringVar(&o.Priority, "priority", "", "high, normal or low (default normal)")
	fl.DurationVar(&o.JobTimeout, "job-timeout", 0, "limit of one attempt (limits.timeout); default the worker's")
	fl.Float64Var(&o.PCCMin, "pcc-min", 0, "required PCC (default 0.99)")
	fl.BoolVar(&f.wait, "wait", false, "wait for the run and print its results")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Hour, "with --wait: give up after this long (exit 3)")
	fl.StringVar(&f.junit, "junit", "", "with --wait: write a JUnit XML report here")
	fl.StringVar(&f.summaryMD, "summary-md", "", "with --wait: write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)")
	fl.BoolVar(&f.gate, "gate", false, "with --wait: apply the regression gate (exit 2 on a regression; needs --store)")
	fl.StringVar(&o.Commit, "commit", ci.Commit, "source commit (env GITHUB_SHA)")
	fl.StringVar(&o.Branch, "branch", ci.Branch, "source branch (env GITHUB_REF_NAME)")
	fl.StringVar(&o.Repo, "repo", ci.Repo, "source repository (env GITHUB_REPOSITORY)")
	fl.StringVar(&o.Project, "project", "", "source project, e.g. tt-forge/tt-forge-onnx")
	fl.StringVar(&o.CIRunID, "ci-run-id", ci.CIRunID, "the CI run submitting (env GITHUB_RUN_ID); exports link it")
	fl.StringArrayVar(&o.BuildWheels, "build-wheel", nil, "wheel file (or pattern like 'dist/*.whl') to upload to the store and measure (repeatable; needs --repo, a full --commit and --store)")
	fl.StringArrayVar(&o.WheelKeys, "wheel", nil, "wheel already in the store to measure, by its key builds/sha256/<hex>/<name>.whl (repeatable)")
	f.gateFlags.register(fl)
	f.gateFlags.registerConfirm(fl)
	f.notify.register(fl)
	a.queueFlags(cmd)
	return cmd
}

func (a *app) runSubmit(cmd *cobra.Command, f *submitFlags) error {
	ctx := cmd.Context()
	if err := refuseWorkerFlags(cmd); err != nil {
		return err
	}
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
	if cmd.Flags().Changed("confirm") && !f.gate {
		return usageErr("--confirm needs --wait --gate: it re-runs what the gate suspects")
	}
	if err := f.notify.check(); err != nil {
		return err
	}
	f.opts.Untrusted = natsconn.Untrusted(a.user, a.inboxPrefix)
	sub, wheels, err := f.opts.Submission(submit.ProcessEnv())
	if errors.Is(err, submit.ErrInvalidOptions) {
		return usageErr("%v", err)
	} else if err != nil {
		return err
	}
	if err := a.needsWheelStore(sub); err != nil {
		return err
	}
	// A commit status goes to the commit this process was given only.
	f.notify.repo, f.notify.commit = sub.Source.Repo, sub.Source.Commit
	p, tc, topo, closeNATS, err := a.openSubmitter(ctx, "benchfleet-submit")
	if err != nil {
		return err
	}
	defer closeNATS()
	a.warnTopologyDrift(ctx, cmd, p.JS, tc, sub.Pools())
	if a.storeURL != "" {
		b, err := a.openStore(ctx)
		if err != nil {
			return err
		}
		defer b.Close()
		p.Store, p.History = b, b
	}
	if err := a.stageWheels(ctx, p.Store, wheels, sub, gateCfg.BaselineBranch); err != nil {
		return err
	}
	res, err := a.submitRun(ctx, p, sub)
	if err != nil {
		return err
	}
	warnings, said := a.warnUnserved(ctx, topo, res)
	if !f.wait {
		fmt.Fprintf(a.stdout, "follow it with: benchfleet runs watch %s\n", res.Manifest.Run)
		return nil
	}
	return a.waitRun(ctx, &watch.Watcher{JS: p.JS, Manifest: res.Manifest, Ephemeral: natsconn.Untrusted(a.user, a.inboxPrefix)}, waitOptions{timeout: f.timeout, junit: f.junit, summaryMD: f.summaryMD, gate: f.gate, gateConfig: gateCfg, notify: &f.notify,
		warnings: warnings, serviceSaid: said})
}

// openSubmitter connects and creates what is missing of the topology, for
// a command that submits (submit, demo); the caller calls closeNATS.
func (a *app) openSubmitter(ctx context.Context, name string) (_ *submit.Submitter, _ topology.Config, _ *topology.Handles, closeNATS func(), _ error) {
	tc, err := a.topologyConfig()
	if err != nil {
		return nil, tc, nil, nil, err
	}
	c, err := a.connect(ctx, name)
	if err != nil {
		return nil, tc, nil, nil, err
	}
	topo, err := topology.Ensure(ctx, c.JS, tc)
	if err != nil {
		c.Close()
		return nil, tc, nil, nil, err
	}
	return &submit.Submitter{JS: c.JS, Runs: topo.Runs, Jobs: topo.Jobs, Untrusted: topo.Untrusted, Log: a.log}, tc, topo, c.Close, nil
}

// submitRun submits sub with p and says what it did: re-attached, or
// submitted (and in what order, on stderr, when p reads a history).
func (a *app) submitRun(ctx context.Context, p *submit.Submitter, sub *submit.Submission) (*submit.SubmitResult, error) {
	res, err := p.Submit(ctx, *sub)
	if errors.Is(err, protocol.ErrInvalid) || errors.Is(err, submit.ErrRunDiffers) {
		return nil, usageErr("%v", err)
	} else if err != nil {
		return nil, err
	}
	m := res.Manifest
	if res.Attached {
		fmt.Fprintf(a.stdout, "run %s already submitted at %s (%s): re-attaching, nothing new published\n",
			m.Run, m.CreatedAt.Format(time.RFC3339), jobCount(len(m.Jobs)))
		return res, nil
	}
	fmt.Fprintf(a.stdout, "run %s: %s submitted (%d new)\n", m.Run, jobCount(len(m.Jobs)), res.Published)
	if sc := res.Schedule; sc.Err != nil {
		fmt.Fprintf(a.stderr, "benchfleet: warning: %s\n", sc)
	} else if p.History != nil {
		fmt.Fprintln(a.stderr, sc)
	}
	return res, nil
}

// warnUnserved says on stderr the submit's warnings (a re-run's other build) and which of the
// run's pools no board in service serves: their jobs stay queued (and --wait keeps waiting)
// until one is. It returns the warnings, for the summary, and the pools' service it read.
func (a *app) warnUnserved(ctx context.Context, topo *topology.Handles, res *submit.SubmitResult) (warnings []string, svc []watch.PoolService) {
	warnings = res.Warnings[:len(res.Warnings):len(res.Warnings)]
	if fleet, err := fleet.ReadFleet(ctx, topo.Workers); err == nil {
		var unserved []string
		unserved, svc = watch.UnservedWarnings(fleet, res.Manifest, time.Now())
		warnings = append(warnings, unserved...)
	}
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	return warnings, svc
}
