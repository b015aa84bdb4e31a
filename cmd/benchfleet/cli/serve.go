package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		listen  string
		actions bool
		gf      gateFlags
	)
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR [--actions]",
		Short: "Serve the web dashboard: the fleet, queues, runs, jobs and series history",
		Long: `Serve a web dashboard on --listen (default 127.0.0.1:8080): the fleet live
(workers, boards idle/busy/quarantined and the job on each), queue depth per
pool and priority, runs in progress and recent runs with their verdict; a
page per run and job (status, samples/s, PCC, board, worker, artifacts and
logs served from the store, the gate's verdict); and a series page with
samples/s over time from the Parquet index with the gate's noise band.

Every page and asset comes from this process (no CDN, no outside fonts).
It is read-only unless --actions is given: then runs can be cancelled,
dead letters re-queued and quarantined boards released, with the rights of
the NATS credentials given (a producer's), by POST forms carrying a CSRF
token. Needs --nats and --store.

` + gateHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gc, err := gf.config()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			nc, topo, err := a.openTopology(ctx, "benchfleet-serve")
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			store, err := a.openStoreRead(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			return a.serveUI(ctx, listen, ui.Config{JS: js, Topology: topo, Store: store, Gate: gc, Actions: actions, Log: a.log}, true)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve the dashboard on")
	cmd.Flags().BoolVar(&actions, "actions", false, "allow cancel, dlq retry and fleet release from the pages (with the NATS credentials' rights)")
	gf.register(cmd.Flags())
	return cmd
}

// serveUI serves the dashboard on addr until ctx ends (wait) or in the
// background (then ctx's end stops it).
func (a *app) serveUI(ctx context.Context, addr string, cfg ui.Config, wait bool) error {
	srv, err := ui.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("--listen %s: %v", addr, err)
	}
	mode := "read-only"
	if cfg.Actions {
		mode = "actions on"
	}
	fmt.Fprintf(a.stdout, "dashboard on http://%s/ (%s)\n", ln.Addr(), mode)
	if !wait {
		go func() { _ = srv.Serve(ctx, ln) }()
		return nil
	}
	return srv.Serve(ctx, ln)
}

// devUI serves the dashboard of the embedded farm (dev --ui).
func (a *app) devUI(ctx context.Context, addr string, actions bool, store storage.Bucket) error {
	nc, js, err := a.connect(ctx, "benchfleet-dev-ui")
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, nc.Close)
	topo, err := topology.Open(ctx, js)
	if err != nil {
		return err
	}
	return a.serveUI(ctx, addr, ui.Config{JS: js, Topology: topo, Store: store, Actions: actions, Log: a.log}, false)
}
