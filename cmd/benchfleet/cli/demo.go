package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/storage"
)

// demoMatrix is the run `benchfleet demo` submits: the real ResNet-50 in
// both data formats and an MLP, on the built-in cpu engine.
const demoMatrix = `
defaults:
  pool: cpu
  runner: cpu
  priority: high
  benchmark: {loop_count: 8, warmup_count: 2}
  limits: {timeout: 20m}
matrix:
  benchmark:
    - {model: resnet50, batch_size: 1, data_format: bfloat16}
    - {model: resnet50, batch_size: 1, data_format: float32}
    - {model: mlp, batch_size: 32, loop_count: 64, warmup_count: 8, data_format: bfloat16}
`

func (a *app) demoCmd() *cobra.Command {
	var dataDir string
	var slots string
	cmd := &cobra.Command{
		Use:   "demo [--data DIR]",
		Short: "Run a small benchmark matrix end to end on an embedded NATS and file store",
		Long:  longHelp("demo"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			lf, err := a.startLocal(ctx, localOptions{dataDir: dataDir, slots: slots, workDir: os.TempDir(), command: "demo"})
			if err != nil {
				return err
			}
			// The demo's run is over (or interrupted): no need to drain.
			defer lf.kill()
			fmt.Fprintf(a.stdout, "benchfleet demo: NATS at %s, results in %s\n", lf.URL, storage.Redact(a.storeURL))
			// The demo's matrix, submitted as submit submits one (no CI
			// provenance from this shell's environment).
			m, err := submit.ParseMatrix([]byte(demoMatrix))
			if err != nil {
				return err
			}
			opts := submit.SubmitOptions{Matrix: m}
			sub, _, err := opts.Submission(submit.Env{Submitter: submit.ProcessEnv().Submitter})
			if err != nil {
				return err
			}
			p, _, _, closeNATS, err := a.openSubmitter(ctx, "benchfleet-demo")
			if err != nil {
				return err
			}
			defer closeNATS()
			p.Store, p.History = lf.Store(), lf.Store()
			res, err := p.Submit(ctx, *sub)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "run %s: %s submitted\n", sub.Run, jobCount(len(sub.Jobs)))
			return a.waitRun(ctx, &watch.Watcher{JS: p.JS, Manifest: res.Manifest}, waitOptions{timeout: time.Hour, inProcess: true})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "./benchfleet-data", "directory for the embedded NATS data and the file store")
	cmd.Flags().StringVar(&slots, "slots", "cpu=1", "built-in slots")
	a.topologyFlags(cmd)
	return cmd
}
