package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		listen     string
		actions    bool
		tokenFile  string
		publicURL  string
		allowHosts []string
		gf         gateFlags
	)
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR [--actions]",
		Short: "Serve the web dashboard: the fleet, queues, runs, jobs and series history",
		Long:  longHelp("serve") + gateHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gc, err := gf.config()
			if err != nil {
				return err
			}
			token, err := ui.OperatorToken(tokenFile, actions)
			if err != nil {
				return usageErr("%v", err)
			}
			if err := ui.CheckPublicURL(publicURL); err != nil {
				return usageErr("--public-url: %v", err)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			s, err := a.session(ctx, "benchfleet-serve", withTopology|withStoreRead)
			if err != nil {
				return err
			}
			defer s.close()
			return a.serveUI(ctx, listen, ui.Config{JS: s.JS, Topology: s.topo, Store: s.store, Gate: gc, Actions: actions,
				ActionsToken: token, AllowHosts: allowHosts, PublicURL: publicURL, Log: a.log}, true)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve the dashboard on")
	cmd.Flags().BoolVar(&actions, "actions", false, "allow cancel, dlq retry and fleet release from the pages (with the NATS credentials' rights) to an operator with the token")
	cmd.Flags().StringVar(&tokenFile, "actions-token-file", "", "file holding the operator token --actions needs (default: $"+ui.TokenEnv+")")
	cmd.Flags().StringVar(&publicURL, "public-url", "", "the `URL` operators reach the dashboard at (e.g. https://bench.example.com/ behind a TLS proxy): its host is answered, and an https one makes the operator cookie Secure")
	cmd.Flags().StringArrayVar(&allowHosts, "allow-host", nil, "also answer requests for this host `NAME` (or NAME:PORT; repeatable; '*' for any) besides loopback names and the --listen address")
	gf.register(cmd.Flags())
	return cmd
}

// serveUI serves the dashboard on addr until ctx ends (wait) or in the
// background (then ctx's end stops it).
func (a *app) serveUI(ctx context.Context, addr string, cfg ui.Config, wait bool) error {
	srv, ln, err := ui.Listen(addr, cfg)
	if le := (*ui.ListenError)(nil); errors.As(err, &le) {
		return usageErr("--listen %s: %v", addr, le.Err)
	} else if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, srv.Banner(ln))
	if !wait {
		go func() { _ = srv.Serve(ctx, ln) }()
		return nil
	}
	return srv.Serve(ctx, ln)
}

// devUI serves the dashboard of the embedded farm (dev --ui).
// With actions and no operator token in $BENCHFLEET_ACTIONS_TOKEN, it
// makes one and prints it.
func (a *app) devUI(ctx context.Context, addr string, actions bool, allowHosts []string, store storage.Bucket) error {
	s, err := a.session(ctx, "benchfleet-dev-ui", withTopology)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, s.close)
	token, _ := ui.ReadToken("")
	if actions && token == "" {
		if token, err = ui.NewToken(); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "dashboard operator token (log in at /login): %s\n", token)
	}
	return a.serveUI(ctx, addr, ui.Config{JS: s.JS, Topology: s.topo, Store: store, Actions: actions, ActionsToken: token,
		AllowHosts: allowHosts, Log: a.log}, false)
}
