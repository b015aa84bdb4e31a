package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/storage"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		listen     string
		actions    bool
		tokenFile  string
		allowHosts []string
		gf         gateFlags
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
token, for an operator who logged in at /login with the operator token
(--actions-token-file, or $BENCHFLEET_ACTIONS_TOKEN; --actions without one
is an error) or who sends "Authorization: Bearer TOKEN". Needs --nats and
--store.

Only requests for loopback names (localhost, 127.0.0.1, [::1]), the
--listen address and the --allow-host names are answered (others get 421):
a DNS-rebound name cannot reach the pages or the actions.

` + gateHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gc, err := gf.config()
			if err != nil {
				return err
			}
			token, err := actionsToken(tokenFile)
			if err != nil {
				return err
			}
			if actions && token == "" {
				return usageErr("--actions needs an operator token: --actions-token-file FILE or $%s", actionsTokenEnv)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			s, err := a.session(ctx, "benchfleet-serve", withTopology|withStoreRead)
			if err != nil {
				return err
			}
			defer s.close()
			return a.serveUI(ctx, listen, ui.Config{JS: s.js, Topology: s.topo, Store: s.store, Gate: gc, Actions: actions,
				ActionsToken: token, AllowHosts: allowHosts, Log: a.log}, true)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve the dashboard on")
	cmd.Flags().BoolVar(&actions, "actions", false, "allow cancel, dlq retry and fleet release from the pages (with the NATS credentials' rights) to an operator with the token")
	cmd.Flags().StringVar(&tokenFile, "actions-token-file", "", "file holding the operator token --actions needs (default: $"+actionsTokenEnv+")")
	cmd.Flags().StringArrayVar(&allowHosts, "allow-host", nil, "also answer requests for this host `NAME` (or NAME:PORT; repeatable; '*' for any) besides loopback names and the --listen address")
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
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsUnspecified() && !ta.IP.IsLoopback() {
		cfg.AllowHosts = append(cfg.AllowHosts, ta.IP.String())
	}
	mode := "read-only"
	if cfg.Actions {
		mode = "actions on"
	}
	hosts := "loopback names"
	if len(cfg.AllowHosts) > 0 {
		hosts += ", " + strings.Join(cfg.AllowHosts, ", ")
	}
	fmt.Fprintf(a.stdout, "dashboard on http://%s/ (%s; answers %s)\n", ln.Addr(), mode, hosts)
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
	token, _ := actionsToken("")
	if actions && token == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		token = hex.EncodeToString(b[:])
		fmt.Fprintf(a.stdout, "dashboard operator token (log in at /login): %s\n", token)
	}
	return a.serveUI(ctx, addr, ui.Config{JS: s.js, Topology: s.topo, Store: store, Actions: actions, ActionsToken: token,
		AllowHosts: allowHosts, Log: a.log}, false)
}

// actionsTokenEnv holds the dashboard's operator token when no
// --actions-token-file is given.
const actionsTokenEnv = "BENCHFLEET_ACTIONS_TOKEN"

// actionsToken is the operator token: the first line of file, else
// $BENCHFLEET_ACTIONS_TOKEN ("" when neither is set).
func actionsToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(actionsTokenEnv)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageErr("--actions-token-file: %v", err)
	}
	tok, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", usageErr("--actions-token-file %s is empty", file)
	}
	return tok, nil
}
