package submit

import (
	"fmt"
	"slices"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// reattachSkew is how far in the future a stored run's created_at may lie
// (clocks of two hosts) before a re-attach refuses it.
const reattachSkew = 5 * time.Minute

// sameSource checks that the run m read from bench-runs is the run s
// submits beyond its job ids: the same source (project, repo, commit,
// branch, wheels — after onRunBuild, which takes the run's wheels for a
// rebuild of the same names; the CI run that submits may differ, a
// re-triggered CI job is another CI run) and a created_at that a submit could have written
// (set, not in the future). Anyone who may write bench-runs may rewrite a
// manifest; a waiter that took its source from there would report (and
// post a commit status) for a commit nobody gave it.
func sameSource(m *protocol.RunManifest, s Submission, now time.Time) error {
	var diffs []string
	for _, f := range []struct {
		name       string
		stored, in string
	}{
		{"source.project", m.Source.Project, s.Source.Project},
		{"source.repo", m.Source.Repo, s.Source.Repo},
		{"source.commit", m.Source.Commit, s.Source.Commit},
		{"source.branch", m.Source.Branch, s.Source.Branch},
	} {
		if f.stored != f.in {
			diffs = append(diffs, fmt.Sprintf("%s %q in the run, %q now", f.name, clip(f.stored), clip(f.in)))
		}
	}
	if !slices.Equal(m.Source.Wheels, s.Source.Wheels) {
		diffs = append(diffs, fmt.Sprintf("source.wheels: %d in the run, %d now (or other files)", len(m.Source.Wheels), len(s.Source.Wheels)))
	}
	switch {
	case m.CreatedAt.IsZero():
		diffs = append(diffs, "created_at is missing in the run")
	case m.CreatedAt.After(now.Add(reattachSkew)):
		diffs = append(diffs, fmt.Sprintf("created_at %s in the run is in the future", m.CreatedAt.UTC().Format(time.RFC3339)))
	}
	if diffs == nil {
		return nil
	}
	return &RunDiffersError{Run: m.Run, Diffs: diffs}
}

// clip shortens a stored string for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
