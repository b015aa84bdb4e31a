package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/ui"

	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) devCmd() *cobra.Command {
	var dataDir, listen, slots, metrics, uiAddr string
	var uiActions bool
	var uiAllowHosts []string
	cmd := &cobra.Command{
		Use:   "dev [--data DIR] [--listen 127.0.0.1:4222] [--slots cpu=2,sim=8] [--metrics-listen ADDR] [--ui ADDR [--ui-actions]]",
		Short: "Run an embedded NATS, a store and a worker until interrupted, for other terminals to submit to",
		Long:  longHelp("dev"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := ui.OperatorToken("", uiAddr != "" && uiActions); err != nil && os.Getenv(ui.TokenEnv) != "" {
				return usageErr("%v", err) // a short token, before the farm starts
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			lf, err := a.startLocal(ctx, localOptions{dataDir: dataDir, listen: listen, slots: slots, workDir: os.TempDir(), metrics: metrics, command: "dev"})
			if err != nil {
				return err
			}
			defer lf.stop()
			if uiAddr != "" {
				uctx, stopUI := context.WithCancel(context.WithoutCancel(ctx))
				defer stopUI()
				if err := a.devUI(uctx, uiAddr, uiActions, uiAllowHosts, lf.Store()); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stdout, "benchfleet dev: NATS at %s, store %s, slots %s\n", lf.URL, storage.Redact(a.storeURL), slots)
			fmt.Fprintf(a.stdout, "submit with: benchfleet submit --nats %s --store %s --pool cpu --model mlp --batch-size 8 --loop-count 32 --wait\n", lf.URL, storage.Redact(a.storeURL))
			fmt.Fprintln(a.stdout, "Ctrl-C to stop")
			<-ctx.Done()
			fmt.Fprintln(a.stdout, "stopping: draining the worker")
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "./benchfleet-data", "directory for the embedded NATS data and the file store")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:4222", "client listen address of the embedded NATS server")
	cmd.Flags().StringVar(&slots, "slots", "cpu=1,sim=4", "built-in slots pool=count[,pool=count]")
	cmd.Flags().StringVar(&metrics, "metrics-listen", "", "serve the worker's Prometheus /metrics and /healthz on this address, e.g. 127.0.0.1:9464")
	cmd.Flags().StringVar(&uiAddr, "ui", "", "serve the web dashboard (as benchfleet serve does) on this `ADDR`, e.g. 127.0.0.1:8080")
	cmd.Flags().BoolVar(&uiActions, "ui-actions", false, "allow cancel, dlq retry and fleet release from the dashboard (operator token from $BENCHFLEET_ACTIONS_TOKEN, else one is made and printed)")
	cmd.Flags().StringArrayVar(&uiAllowHosts, "ui-allow-host", nil, "the dashboard also answers this host `NAME` (repeatable; as serve --allow-host)")
	a.topologyFlags(cmd)
	return cmd
}
