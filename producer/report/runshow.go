package report

import (
	"fmt"
	"io"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// WriteRunShow writes what `runs show` prints of run m from its jobs'
// states: who submitted it and when, its source, a row per job (a job not
// ended says what it is doing, JobState.Activity; only a wait that timed
// out calls such jobs unfinished) and the progress line.
func WriteRunShow(w io.Writer, m *protocol.RunManifest, states map[string]*runstate.JobState) error {
	fmt.Fprintf(w, "run %s: %s, created %s by %s, priority %s\n", m.Run, runstate.Plural(runstate.RunJobs(m), "1 job", fmt.Sprintf("%d jobs", runstate.RunJobs(m))),
		m.CreatedAt.Format(time.RFC3339), m.Submitter, m.Priority)
	if m.Source.Commit != "" {
		fmt.Fprintf(w, "source: %s %s@%s\n", m.Source.Repo, m.Source.Branch, m.Source.Commit)
	}
	rows := runstate.Rows(m, states)
	for i := range rows {
		if st := states[rows[i].Job]; st != nil {
			rows[i].Activity = st.Activity()
		}
	}
	if err := WriteTable(w, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, runstate.ProgressOf(m, states).String())
	return err
}
