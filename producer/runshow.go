package producer

import (
	"fmt"
	"io"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Activity says what a job that has not ended is doing: "running" (with
// its phase, "running: timing"), "retrying", "queued", "ending (result
// awaited)" or "spooled on worker W (result not in the store yet)"; ""
// once it has ended.
func (s *JobState) Activity() string {
	switch {
	case s.Terminal():
		return ""
	case s.Reported() && s.Spooled:
		return "spooled on worker " + s.Worker + " (result not in the store yet)"
	case s.Reported():
		return "ending (result awaited)"
	case s.Kind == protocol.EventRetrying:
		return "retrying"
	case s.Kind == protocol.EventPhase && s.Phase != "":
		return "running: " + s.Phase
	case s.OnBoard():
		return "running"
	}
	return "queued"
}

// WriteRunShow writes what `runs show` prints of run m from its jobs'
// states: who submitted it and when, its source, a row per job (a job not
// ended says what it is doing, JobState.Activity; only a wait that timed
// out calls such jobs unfinished) and the progress line.
func WriteRunShow(w io.Writer, m *protocol.RunManifest, states map[string]*JobState) error {
	fmt.Fprintf(w, "run %s: %s, created %s by %s, priority %s\n", m.Run, plural(RunJobs(m), "1 job", fmt.Sprintf("%d jobs", RunJobs(m))),
		m.CreatedAt.Format(time.RFC3339), m.Submitter, m.Priority)
	if m.Source.Commit != "" {
		fmt.Fprintf(w, "source: %s %s@%s\n", m.Source.Repo, m.Source.Branch, m.Source.Commit)
	}
	rows := Rows(m, states)
	for i := range rows {
		if st := states[rows[i].Job]; st != nil {
			rows[i].Activity = st.Activity()
		}
	}
	if err := WriteTable(w, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, RunProgress(m, states).String())
	return err
}
