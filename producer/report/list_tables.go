package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// WriteRuns writes sums as the table of `benchfleet runs list`; text from
// manifests is escaped for a terminal. A run ListRuns did not look at in
// detail has STATE "?".
func WriteRuns(w io.Writer, sums []watch.RunSummary) error {
	tw := tabwriter.NewWriter(escape.TerminalWriter(w), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCREATED\tJOBS\tPRIORITY\tCOMMIT\tSUBMITTER\tSTATE")
	for _, r := range sums {
		m, state := r.Manifest, r.State
		if state == "" {
			state = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Run, m.CreatedAt.Format(time.RFC3339), runstate.RunJobs(m), m.Priority,
			runstate.ShortCommit(m.Source.Commit), m.Submitter, state)
	}
	return tw.Flush()
}

// WriteDeadLetters writes entries as the table of `benchfleet dlq list`,
// each reason shortened and escaped for a terminal, and their count.
func WriteDeadLetters(w io.Writer, entries []fleet.DeadEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRUN\tPOOL\tATTEMPTS\tTIME\tREASON")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.ID, e.Letter.Run, e.Pool, e.Attempts, e.Time.Format(time.RFC3339), escape.Terminal(runstate.Shorten(e.Reason, 100)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(%d dead %s)\n", len(entries), runstate.Plural(len(entries), "letter", "letters"))
	return err
}
