package submit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchfleet/benchfleet/protocol"
)

// onRunBuild is s re-attaching to the run m with the build m was first
// submitted with, when s brings the same wheels by name (in the same
// order) with other bytes: a re-run of CI that rebuilt the commit without
// SOURCE_DATE_EPOCH. A job's id binds its wheels' sha256 (protocol.Job.Cell:
// a result names the exact build it measured), so the jobs of s that name
// s's wheels are made again with the run's, and their ids with them; what
// else differs is left for sameJobs and sameSource to refuse. It returns
// s unchanged and no warning when the wheels are the same, or are not the
// same names; otherwise the warning names each wheel's two sha256s.
func onRunBuild(m *protocol.RunManifest, s Submission) (Submission, string) {
	have, now := m.Source.Wheels, s.Source.Wheels
	if len(have) != len(now) || slices.Equal(have, now) {
		return s, ""
	}
	var diffs []string
	for i, w := range have {
		sum, _, ok := protocol.ParseBuildKey(w.URL)
		if w.Name() != now[i].Name() || !ok || sum != w.SHA256 {
			return s, "" // not the same build names, or not a build key: sameSource refuses
		}
		if w.SHA256 != now[i].SHA256 {
			diffs = append(diffs, fmt.Sprintf("%s sha256 %s in the run, %s now", w.Name(), w.SHA256, now[i].SHA256))
		}
	}
	jobs := make([]*protocol.Job, len(s.Jobs))
	for i, j := range s.Jobs {
		jobs[i] = j
		if slices.Equal(j.Source.Wheels, now) {
			c := *j
			c.Run, c.Source.Wheels = s.Run, slices.Clone(have)
			_, c.ID = c.CellID()
			jobs[i] = &c
		}
	}
	s.Jobs, s.Source.Wheels = jobs, slices.Clone(have)
	return s, fmt.Sprintf("run %s measures the build it was first submitted with (%s), not the wheels given now: %s. The commit was built again with other bytes (a build without SOURCE_DATE_EPOCH is not reproducible); submit under another --run to measure this build",
		m.Run, m.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(diffs, "; "))
}
