package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
)

func (a *app) runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "List, show, watch and cancel runs"}
	var format string
	list := &cobra.Command{
		Use: "list", Short: "List submitted runs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			// A job's end is its stored result: with a store, STATE is
			// exact; without one it follows the events.
			n := withTopology
			if format != "json" {
				n |= withStoreIf
			}
			s, err := a.session(ctx, "benchfleet-runs", n)
			if err != nil {
				return err
			}
			defer s.close()
			if format == "json" {
				sums, err := watch.ListRuns(ctx, s.JS, s.topo.Runs, nil, 0)
				if err = a.warnSkippedRuns(err); err != nil {
					return err
				}
				mans := []*protocol.RunManifest{}
				for _, r := range sums {
					mans = append(mans, r.Manifest)
				}
				return writeJSON(a.stdout, mans)
			}
			sums, err := watch.ListRuns(ctx, s.JS, s.topo.Runs, s.store, math.MaxInt)
			if err = a.warnSkippedRuns(err); err != nil {
				return err
			}
			return report.WriteRuns(a.stdout, sums)
		},
	}
	list.Flags().StringVar(&format, "format", "table", "table or json")

	var watchTimeout time.Duration
	watchCmd := &cobra.Command{
		Use: "watch RUN", Short: "Follow a run's progress to its end and print its results", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, m, err := a.runSession(ctx, "benchfleet-watch", args[0], 0)
			if err != nil {
				return err
			}
			defer s.close()
			return a.waitRun(ctx, &watch.Watcher{JS: s.JS, Manifest: m, Ephemeral: natsconn.Untrusted(a.user, a.inboxPrefix)}, waitOptions{timeout: watchTimeout})
		},
	}
	watchCmd.Flags().DurationVar(&watchTimeout, "timeout", 2*time.Hour, "give up after this long (exit 3)")

	var showFormat string
	show := &cobra.Command{
		Use: "show RUN", Short: "Show a run's manifest and the current state of its jobs", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(showFormat, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			// Statuses come from stored results: without --store, show has
			// the events' progress only.
			s, m, err := a.runSession(ctx, "benchfleet-runs", args[0], withStoreIf)
			if err != nil {
				return err
			}
			defer s.close()
			if showFormat == "json" {
				return writeJSON(a.stdout, m)
			}
			states, err := (&watch.Watcher{JS: s.JS, Manifest: m, Store: s.store, Ephemeral: natsconn.Untrusted(a.user, a.inboxPrefix)}).Snapshot(ctx)
			if err == nil {
				err = report.WriteRunShow(a.stdout, m, states)
			}
			if err == nil {
				report.WriteNotes(a.stdout, watch.SpooledReport(ctx, s.JS, runstate.ProgressOf(m, states)))
			}
			return err
		},
	}
	show.Flags().StringVar(&showFormat, "format", "table", "table or json (the manifest)")

	cancel := &cobra.Command{
		Use: "cancel RUN", Short: "Cancel a run: stop its running jobs, remove its queued ones", Args: cobra.ExactArgs(1),
		Long: longHelp("runs-cancel"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := protocol.ValidID("run", args[0]); err != nil {
				return usageErr("%v", err)
			}
			n := withTopology
			if a.storeURL != "" {
				n |= withStore
			}
			s, err := a.session(ctx, "benchfleet-cancel", n)
			if err != nil {
				return err
			}
			defer s.close()
			out, err := submit.CancelRun(ctx, s.JS, submit.CancelRequest{Run: args[0], Store: s.store, Ephemeral: natsconn.Untrusted(a.user, a.inboxPrefix), LeaveQueued: natsconn.Untrusted(a.user, a.inboxPrefix)})
			if err != nil {
				if errors.Is(err, runstate.ErrUnknownRun) {
					return usageErr("run %q not found", args[0])
				}
				return err
			}
			if out.Finished {
				fmt.Fprintf(a.stdout, "run %s already finished (%s): nothing to cancel\n", args[0], jobCount(len(out.Manifest.Jobs)))
				return nil
			}
			fmt.Fprintf(a.stdout, "run %s cancelled: %s\n", args[0], submit.CancelSummary(out))
			return nil
		},
	}
	cmd.AddCommand(list, show, watchCmd, cancel)
	return cmd
}

// warnSkippedRuns says on stderr which runs ListRuns skipped (their
// manifest is refused) and returns nil for that; any other error is
// returned.
func (a *app) warnSkippedRuns(err error) error {
	var sk *runstate.SkippedRunsError
	if !errors.As(err, &sk) {
		return err
	}
	for _, e := range sk.Errs {
		fmt.Fprintf(a.stderr, "warning: %v (skipped)\n", e)
	}
	return nil
}

// runSession opens a session with the topology (and what n asks for
// besides) and reads run's manifest, as a usage error when the run is
// unknown.
func (a *app) runSession(ctx context.Context, name, run string, n need) (*session, *protocol.RunManifest, error) {
	if err := protocol.ValidID("run", run); err != nil {
		return nil, nil, usageErr("%v", err)
	}
	s, err := a.session(ctx, name, n|withTopology)
	if err != nil {
		return nil, nil, err
	}
	m, err := runstate.GetManifest(ctx, s.topo.Runs, run)
	if errors.Is(err, runstate.ErrUnknownRun) {
		err = usageErr("run %q not found", run)
	}
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, m, nil
}

func checkFormat(got string, allowed ...string) error {
	for _, f := range allowed {
		if got == f {
			return nil
		}
	}
	return usageErr("--format %q: want %s", got, strings.Join(allowed, " or "))
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jobCount is "1 job" or "n jobs".
func jobCount(n int) string { return count(n, "job") }

// count is "1 noun" or "n nouns".
func count(n int, noun string) string { return runstate.Count(n, noun) }
