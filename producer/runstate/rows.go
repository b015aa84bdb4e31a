package runstate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/protocol"
)

// Row is one job of a run's summary.
type Row struct {
	Job        string
	Model      string
	Pool       string
	Runner     string
	BatchSize  int
	DataFormat string
	Status     protocol.Status // "" while not ended
	// SamplesPerSec and PCC are 0 when unknown.
	SamplesPerSec float64
	PCC           float64
	Attempt       int
	Reason        string
	// Change is the relative change of samples/sec against the baseline
	// (e.g. -0.12 = 12% slower); nil when not compared.
	Change *float64
	// Verdict is the regression gate's verdict when it ran.
	Verdict string
	// Median is the median samples/sec of the row's attempts when the gate
	// judged it on them (ApplyVerdicts; Change is then the median's); 0:
	// judged on SamplesPerSec alone.
	Median float64
	Result *protocol.Result
	// Activity is what a job that has not ended is doing (JobState.Activity:
	// running, queued, ...), for views of a run in progress; "" in a
	// waiter's summary, whose jobs not ended at its timeout are
	// "unfinished".
	Activity string
	// Repeats are the job's confirmation repeats (protocol.ManifestJob
	// Repeat and Of), in repeat order: attempts of this row, not rows.
	Repeats []Attempt
}

// Untrusted reports whether the row's result is of the untrusted producer
// (protocol.Result.Untrusted): judged against trusted baselines, never in
// one.
func (r Row) Untrusted() bool { return r.Result != nil && r.Result.Untrusted() }

// UntrustedNote is what every view says of a result of the untrusted
// producer.
const UntrustedNote = "untrusted: judged against trusted baselines, never in one"

// JudgedValue is the samples/sec the row's Change and Verdict are of: the
// median of its attempts when the gate judged it on them (Median), else
// SamplesPerSec. Every output that shows a change beside a value shows this.
func (r Row) JudgedValue() float64 {
	if r.Median > 0 {
		return r.Median
	}
	return r.SamplesPerSec
}

// JudgedRate is JudgedValue for text (FmtRate), marked "(median)" when it
// is the median of the row's attempts.
func (r Row) JudgedRate() string {
	if r.Median > 0 {
		return FmtRate(r.Median) + " (median)"
	}
	return FmtRate(r.SamplesPerSec)
}

// Rows builds the summary rows of a run from its job states, in manifest
// order. A row's status and figures come from the job's stored result only
// (a dead-lettered job is an error); events give the progress of the rest.
func Rows(m *protocol.RunManifest, states map[string]*JobState) []Row {
	var rows []Row
	repeats := RepeatsOf(m)
	for _, st := range Sorted(m, states) {
		if st.Job.Repeat > 0 && states[st.Job.Of] != nil {
			continue // an attempt of its original's row
		}
		r := Row{Job: st.Job.ID, Model: st.Job.Model, Pool: st.Job.Pool, Runner: st.Job.Runner, BatchSize: st.Job.BatchSize,
			DataFormat: st.Job.DataFormat, Status: st.Status(), Attempt: st.Attempt}
		switch {
		case st.Result != nil:
			res := st.Result
			r.Result = res
			r.SamplesPerSec = res.Measurements.SamplesPerSec
			r.PCC = res.PCC.Value
			r.Attempt = res.Attempt
			if b := res.Measurements.BatchSize; b > 0 {
				r.BatchSize = b // what ran: a harness may fix its own batch
			}
			switch {
			case res.Error != nil:
				r.Reason = res.Error.Message
			case len(res.Notes) > 0:
				r.Reason = strings.Join(res.Notes, "; ")
			}
			if n := len(st.Retried); n > 0 {
				// A board that hung and was reset shows on the job it
				// held, also when a later attempt passed.
				r.Reason = strings.TrimPrefix(r.Reason+"; ", "; ") + fmt.Sprintf("%s before: %s", Plural(n, "1 retry", fmt.Sprintf("%d retries", n)), st.Retried[n-1])
			}
		case st.Terminal():
			r.Reason = st.Message
		case st.Reported() && st.Spooled:
			r.Reason = fmt.Sprintf("reported %s; result spooled on worker %s, not in the store yet", st.Kind, st.Worker)
		case st.Reported():
			r.Reason = fmt.Sprintf("reported %s; no stored result read (yet)", st.Kind)
		case st.Kind == protocol.EventPhase && st.Phase != "":
			r.Reason = "in " + st.Phase // the phase it was in: "in compile"
		default:
			r.Reason = string(st.Kind)
		}
		for _, rj := range repeats[st.Job.ID] {
			rs := states[rj.ID]
			if rs == nil {
				continue
			}
			res := rs.Result
			if res == nil && rs.Terminal() {
				res = &protocol.Result{Job: rj.ID, Status: rs.Status()}
			}
			r.Repeats = append(r.Repeats, AttemptOf(rj.ID, rj.Repeat, res))
		}
		rows = append(rows, r)
	}
	return rows
}

// FmtRate renders samples/sec as every table prints it: "-" when not measured.
func FmtRate(v float64) string {
	if v == 0 {
		return "-"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// FmtPCC renders a PCC as every table prints it: "-" when the check did not
// run, six decimals, or the distance from 1 when six decimals would read 1.
func FmtPCC(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1 && v >= 0.9999995:
		// Six decimals would print 1.000000 and hide that the outputs
		// differ: show the distance from 1 instead.
		return "1-" + strconv.FormatFloat(1-v, 'e', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

// FmtChange renders a relative change as a signed percentage.
func FmtChange(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *c*100)
}

// Shorten keeps the first line of s, cut to n bytes with an ellipsis.
func Shorten(s string, n int) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) <= n {
		return s
	}
	k := n - 1
	for k > 0 && !utf8.RuneStart(s[k]) { // never cut a character in two
		k--
	}
	return s[:k] + "…"
}

// Attempt is one measurement of a job's cell: the original job (Repeat 0)
// or one of its confirmation repeats.
type Attempt struct {
	Job    string `json:"job"`
	Repeat int    `json:"repeat"`
	// Board is the board it ran on ("<worker>/<device>"), "" before a result.
	Board  string          `json:"board,omitempty"`
	Status protocol.Status `json:"status"`
	// SamplesPerSec is 0 when not measured.
	SamplesPerSec float64 `json:"samples_per_sec"`
	// Result is the attempt's stored result (nil while it has none).
	Result *protocol.Result `json:"-"`
}

// AttemptOf is the attempt of job id's repeat k, from its result if any.
func AttemptOf(id string, k int, r *protocol.Result) Attempt {
	a := Attempt{Job: id, Repeat: k, Result: r}
	if r != nil {
		a.Status, a.SamplesPerSec = r.Status, r.Measurements.SamplesPerSec
		if r.Worker.ID != "" {
			a.Board = r.Board()
		}
	}
	return a
}

// RepeatsOf indexes the confirmation repeats of manifest m by the job they
// repeat, in repeat order. A repeat counts only when it is what RepeatJob
// makes of its original: Of names a job of m, and its id is that job's
// cell with its repeat number (repeatID). Anyone who may write bench-runs
// may list "repeats"; one that names another result is not an attempt.
func RepeatsOf(m *protocol.RunManifest) map[string][]protocol.ManifestJob {
	var out map[string][]protocol.ManifestJob
	var cells map[string]string
	for _, j := range m.Jobs {
		if j.Repeat <= 0 || j.Of == "" {
			continue
		}
		if cells == nil {
			cells = map[string]string{}
			for _, o := range m.Jobs {
				if o.Repeat == 0 {
					cells[o.ID] = o.Cell
				}
			}
		}
		if cell, ok := cells[j.Of]; !ok || cell == "" || j.Repeat > protocol.MaxRepeat || j.ID != RepeatID(m.Run, cell, j.Repeat) {
			continue
		}
		if out == nil {
			out = map[string][]protocol.ManifestJob{}
		}
		out[j.Of] = append(out[j.Of], j)
	}
	return out
}

// RepeatCell is the cell of repeat k of the job whose cell is cell
// (protocol.Job.Cell: " repeat=k" after its limits).
func RepeatCell(cell string, k int) string {
	head := CellHead(cell)
	return head + " repeat=" + strconv.Itoa(k) + cell[len(head):]
}

// RepeatID is the id of repeat k of run's job whose cell is cell.
func RepeatID(run, cell string, k int) string {
	return protocol.JobID(run, RepeatCell(cell, k))
}

// CellHead is the part of a cell before its source (protocol.Job.Cell):
// unquoted key=value fields only.
func CellHead(cell string) string {
	if i := strings.Index(cell, " source="); i >= 0 {
		return cell[:i]
	}
	return cell
}

// StatusWord is how the reports name a status ("unfinished" for a job
// that has not ended).
func StatusWord(s protocol.Status) string {
	if s == "" {
		return "unfinished"
	}
	return string(s)
}

// Median is the median of xs (0 for none), xs left as it is.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WithoutRepeats is m without its confirmation repeats (m itself when it
// has none).
func WithoutRepeats(m *protocol.RunManifest) *protocol.RunManifest {
	if RepeatsOf(m) == nil {
		return m
	}
	c := *m
	c.Jobs = make([]protocol.ManifestJob, 0, len(m.Jobs))
	for _, j := range m.Jobs {
		if j.Repeat == 0 {
			c.Jobs = append(c.Jobs, j)
		}
	}
	return &c
}
