package producer

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchfleet/benchfleet/internal/escape"
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
	Result  *protocol.Result
	// Repeats are the job's confirmation repeats (protocol.ManifestJob
	// Repeat and Of), in repeat order: attempts of this row, not rows.
	Repeats []Attempt
}

// Rows builds the summary rows of a run from its job states, in manifest
// order. A row's status and figures come from the job's stored result only
// (a dead-lettered job is an error); events give the progress of the rest.
func Rows(m *protocol.RunManifest, states map[string]*JobState) []Row {
	var rows []Row
	repeats := repeatsOf(m)
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
		case st.Terminal():
			r.Reason = st.Message
		case st.Reported() && st.Spooled:
			r.Reason = fmt.Sprintf("reported %s; result spooled on worker %s, not in the store yet", st.Kind, st.Worker)
		case st.Reported():
			r.Reason = fmt.Sprintf("reported %s; no stored result read (yet)", st.Kind)
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
			r.Repeats = append(r.Repeats, attemptOf(rj.ID, rj.Repeat, res))
		}
		rows = append(rows, r)
	}
	return rows
}

// WriteTable prints rows as an aligned table, then what their results
// measured (writeBuildLines).
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	withChange := false
	for _, r := range rows {
		if r.Change != nil || r.Verdict != "" {
			withChange = true
		}
	}
	header := "JOB\tMODEL\tPOOL\tBATCH\tFORMAT\tSAMPLES/S\tPCC\tSTATUS"
	if withChange {
		header += "\tCHANGE\tVERDICT"
	}
	fmt.Fprintln(tw, header+"\tNOTE")
	for _, r := range rows {
		status := string(r.Status)
		if status == "" {
			status = "unfinished"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", r.Job, r.Model, r.Pool, r.BatchSize, r.DataFormat,
			FmtRate(r.SamplesPerSec), FmtPCC(r.PCC), status)
		if withChange {
			line += "\t" + FmtChange(r.Change) + "\t" + r.Verdict
		}
		fmt.Fprintln(tw, line+"\t"+escape.Terminal(Shorten(r.Reason, 80)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeBuildLines(w, rows)
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
	return s[:n-1] + "…"
}
