package submit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// ErrRunDiffers is matched (errors.Is) by the error of a Submit that names
// an existing run but brings other jobs than the run has: re-attaching
// would show results of a spec nobody asked for.
var ErrRunDiffers = errors.New("run exists with a different spec")

// RunDiffersError says how a re-submitted run differs from the one stored.
type RunDiffersError struct {
	Run string
	// Diffs are human-readable differences, e.g. "batch 4 in the run, batch 16 now".
	Diffs []string
}

func (e *RunDiffersError) Error() string {
	return fmt.Sprintf("run %s was already submitted with a different spec: %s; submit it under another --run id, or repeat the original spec to re-attach",
		e.Run, strings.Join(e.Diffs, "; "))
}

// Is makes the error match ErrRunDiffers.
func (e *RunDiffersError) Is(target error) bool { return target == ErrRunDiffers }

// sameJobs checks that jobs are exactly the jobs of the run m (job ids are
// a hash of the run and the cell, so the same spec gives the same ids).
func sameJobs(m *protocol.RunManifest, jobs []*protocol.Job) error {
	m = runstate.WithoutRepeats(m) // the gate's confirmation repeats are not the submit's
	have := map[string]protocol.ManifestJob{}
	withCells := true
	for _, j := range m.Jobs {
		have[j.ID] = j
		withCells = withCells && j.Cell != ""
	}
	want := map[string]bool{}
	var extra []string // cells of new jobs the run does not have
	for _, j := range jobs {
		want[j.ID] = true
		if _, ok := have[j.ID]; !ok {
			extra = append(extra, cellOf(j, withCells))
		}
	}
	var missing []string // cells of the run's jobs this submit lacks
	for _, j := range m.Jobs {
		if !want[j.ID] {
			missing = append(missing, manifestCell(j, withCells))
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return nil
	}
	e := &RunDiffersError{Run: m.Run}
	if len(m.Jobs) != len(jobs) {
		e.Diffs = append(e.Diffs, fmt.Sprintf("the run has %d job(s), this submit %d", len(m.Jobs), len(jobs)))
	}
	// Pair each new cell with the closest old one and name the fields that differ.
	used := map[int]bool{}
	for _, x := range extra {
		best, bestN := -1, 0
		for i, o := range missing {
			if used[i] {
				continue
			}
			if n := len(cellDiff(o, x)); best < 0 || n < bestN {
				best, bestN = i, n
			}
		}
		if best < 0 {
			e.Diffs = append(e.Diffs, "new job "+readable(x))
			continue
		}
		used[best] = true
		var olds, news []string
		for _, d := range cellDiff(missing[best], x) {
			olds, news = append(olds, d[0]), append(news, d[1])
		}
		e.Diffs = append(e.Diffs, fmt.Sprintf("%s in the run, %s now", strings.Join(olds, " "), strings.Join(news, " ")))
	}
	for i, o := range missing {
		if !used[i] {
			e.Diffs = append(e.Diffs, "job "+readable(o)+" only in the run")
		}
	}
	if len(e.Diffs) > 6 {
		e.Diffs = append(e.Diffs[:6], fmt.Sprintf("and %d more", len(e.Diffs)-6))
	}
	return e
}

// cellOf is a job's cell, or the short form of a manifest without cells.
func cellOf(j *protocol.Job, full bool) string {
	if full {
		return j.Cell()
	}
	return shortCell(j.Pool, j.Runner, j.Benchmark.Test, j.Benchmark.Model, j.Benchmark.BatchSize, j.Benchmark.DataFormat)
}

func manifestCell(j protocol.ManifestJob, full bool) string {
	if full {
		return j.Cell
	}
	return shortCell(j.Pool, j.Runner, j.Test, j.Model, j.BatchSize, j.DataFormat)
}

func shortCell(pool, runner, test, model string, batch int, format string) string {
	return fmt.Sprintf("pool=%s runner=%s test=%s model=%s batch=%d format=%s", pool, runner, test, model, batch, format)
}

// cellDiff returns the [old, new] tokens ("batch 4", "batch 16") that differ
// between two cells, in the order of the new cell.
func cellDiff(old, new string) [][2]string {
	ov, ok := cellFields(old)
	nv, nk := cellFields(new)
	var out [][2]string
	for _, k := range nk {
		if ov[k] != nv[k] {
			out = append(out, [2]string{field(k, ov[k]), field(k, nv[k])})
		}
	}
	for _, k := range ok {
		if _, there := nv[k]; !there {
			out = append(out, [2]string{field(k, ov[k]), field(k, "")})
		}
	}
	return out
}

func field(k, v string) string {
	if v == "" {
		v = "(none)"
	}
	return k + " " + v
}

// cellFields splits "k=v k=v" (label values are quoted without spaces
// escaped, so split on " label." boundaries too) into a map and key order.
func cellFields(cell string) (map[string]string, []string) {
	m := map[string]string{}
	var keys []string
	for _, tok := range strings.Fields(cell) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok && len(keys) > 0 { // a label value with a space
			last := keys[len(keys)-1]
			m[last] += " " + tok
			continue
		}
		keys = append(keys, k)
		m[k] = v
	}
	return m, keys
}

func readable(cell string) string {
	m, keys := cellFields(cell)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] != "" && m[k] != "0" && m[k] != "false" {
			parts = append(parts, k+" "+m[k])
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
