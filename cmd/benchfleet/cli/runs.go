package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
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
			nc, js, err := a.connect(ctx, "benchfleet-runs")
			if err != nil {
				return err
			}
			defer nc.Close()
			topo, err := topology.Open(ctx, js)
			if err != nil {
				return err
			}
			if format == "json" {
				sums, err := producer.ListRuns(ctx, js, topo.Runs, nil, 0)
				if err = a.warnSkippedRuns(err); err != nil {
					return err
				}
				mans := []*protocol.RunManifest{}
				for _, r := range sums {
					mans = append(mans, r.Manifest)
				}
				return writeJSON(a.stdout, mans)
			}
			// A job's end is its stored result: with a store, STATE is
			// exact; without one it follows the events.
			var store storage.Bucket
			if a.storeURL != "" {
				if store, err = a.openStoreRead(ctx); err != nil {
					return err
				}
				defer store.Close()
			}
			sums, err := producer.ListRuns(ctx, js, topo.Runs, store, math.MaxInt)
			if err = a.warnSkippedRuns(err); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(escape.TerminalWriter(a.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tCREATED\tJOBS\tPRIORITY\tCOMMIT\tSUBMITTER\tSTATE")
			for _, r := range sums {
				m, state := r.Manifest, r.State
				if state == "" {
					state = "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Run, m.CreatedAt.Format(time.RFC3339), len(m.Jobs), m.Priority,
					producer.ShortCommit(m.Source.Commit), m.Submitter, state)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&format, "format", "table", "table or json")

	var watchTimeout time.Duration
	watch := &cobra.Command{
		Use: "watch RUN", Short: "Follow a run's progress to its end and print its results", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			nc, js, err := a.connect(ctx, "benchfleet-watch")
			if err != nil {
				return err
			}
			defer nc.Close()
			m, err := a.manifest(cmd, js, args[0])
			if err != nil {
				return err
			}
			return a.waitRun(ctx, &producer.Watcher{JS: js, Manifest: m}, waitOptions{timeout: watchTimeout})
		},
	}
	watch.Flags().DurationVar(&watchTimeout, "timeout", 2*time.Hour, "give up after this long (exit 3)")

	var showFormat string
	show := &cobra.Command{
		Use: "show RUN", Short: "Show a run's manifest and the current state of its jobs", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(showFormat, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			nc, js, err := a.connect(ctx, "benchfleet-runs")
			if err != nil {
				return err
			}
			defer nc.Close()
			m, err := a.manifest(cmd, js, args[0])
			if err != nil {
				return err
			}
			if showFormat == "json" {
				return writeJSON(a.stdout, m)
			}
			fmt.Fprintf(a.stdout, "run %s: %s, created %s by %s, priority %s\n", m.Run, jobCount(len(m.Jobs)),
				m.CreatedAt.Format(time.RFC3339), m.Submitter, m.Priority)
			if m.Source.Commit != "" {
				fmt.Fprintf(a.stdout, "source: %s %s@%s\n", m.Source.Repo, m.Source.Branch, m.Source.Commit)
			}
			// Statuses come from stored results: without --store, show has
			// the events' progress only.
			w := &producer.Watcher{JS: js, Manifest: m}
			if a.storeURL != "" {
				store, err := a.openStoreRead(ctx)
				if err != nil {
					return err
				}
				defer store.Close()
				w.Store = store
			}
			states, err := w.Snapshot(ctx)
			if err != nil {
				return err
			}
			rows := producer.Rows(m, states)
			if err := producer.WriteTable(a.stdout, rows); err != nil {
				return err
			}
			p := producer.ProgressOf(m, states)
			fmt.Fprintln(a.stdout, p.String())
			a.printSpooled(producer.SpooledReport(ctx, js, p))
			return nil
		},
	}
	show.Flags().StringVar(&showFormat, "format", "table", "table or json (the manifest)")

	cancel := &cobra.Command{
		Use: "cancel RUN", Short: "Cancel a run: stop its running jobs, remove its queued ones", Args: cobra.ExactArgs(1),
		Long: `Cancel a run that has not finished: its running jobs are stopped by their
workers, and its jobs still queued are removed from the queue at once (also
those of pools no worker serves), each ended with a cancelled event and,
with --store (or BENCHFLEET_STORE), a cancelled result. A run whose jobs
have all ended is left as it is.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := protocol.ValidID("run", args[0]); err != nil {
				return usageErr("%v", err)
			}
			nc, js, err := a.connect(ctx, "benchfleet-cancel")
			if err != nil {
				return err
			}
			defer nc.Close()
			topo, err := topology.Open(ctx, js)
			if err != nil {
				return err
			}
			req := producer.CancelRequest{Run: args[0]}
			if a.storeURL != "" {
				b, err := a.openStore(ctx)
				if err != nil {
					return err
				}
				defer b.Close()
				req.Store = b
			}
			out, err := producer.CancelRun(ctx, js, topo, req)
			if err != nil {
				if errors.Is(err, jetstream.ErrKeyNotFound) {
					return usageErr("run %q not found", args[0])
				}
				return err
			}
			if out.Finished {
				fmt.Fprintf(a.stdout, "run %s already finished (%s): nothing to cancel\n", args[0], jobCount(len(out.Manifest.Jobs)))
				return nil
			}
			fmt.Fprintf(a.stdout, "run %s cancelled: %s\n", args[0], producer.CancelSummary(out))
			return nil
		},
	}
	cmd.AddCommand(list, show, watch, cancel)
	return cmd
}

// warnSkippedRuns says on stderr which runs ListRuns skipped (their
// manifest is refused) and returns nil for that; any other error is
// returned.
func (a *app) warnSkippedRuns(err error) error {
	var sk *producer.SkippedRunsError
	if !errors.As(err, &sk) {
		return err
	}
	for _, e := range sk.Errs {
		fmt.Fprintf(a.stderr, "warning: %v (skipped)\n", e)
	}
	return nil
}

// manifest reads a run's manifest, as a usage error when the run is unknown.
func (a *app) manifest(cmd *cobra.Command, js jetstream.JetStream, run string) (*protocol.RunManifest, error) {
	if err := protocol.ValidID("run", run); err != nil {
		return nil, usageErr("%v", err)
	}
	topo, err := topology.Open(cmd.Context(), js)
	if err != nil {
		return nil, err
	}
	m, err := producer.GetManifest(cmd.Context(), topo.Runs, run)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, usageErr("run %q not found", run)
	}
	return m, err
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
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
