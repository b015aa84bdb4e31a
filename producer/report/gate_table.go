package report

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// WriteGateTable prints the gate's verdicts, the attempts of every job
// with confirmation repeats, and a closing line with the counts and the
// outcome.
func WriteGateTable(w io.Writer, rep *gate.RunReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A TRUST column only when some job is the untrusted producer's.
	withTrust := false
	for _, v := range rep.Verdicts {
		withTrust = withTrust || v.Trust.Untrusted()
	}
	header := "JOB\tMODEL\tPOOL\tBATCH\tFORMAT\tBASELINE\tVALUE\tCHANGE\tBAND\tHISTORY\tVERDICT"
	if withTrust {
		header += "\tTRUST"
	}
	fmt.Fprintln(tw, header)
	for _, v := range rep.Verdicts {
		base, band := "-", "-"
		if v.Baseline != nil {
			base = strconv.FormatFloat(*v.Baseline, 'f', 1, 64)
			band = "±" + strconv.FormatFloat(v.Band, 'f', 1, 64)
		}
		val := "-"
		if v.Value > 0 {
			val = strconv.FormatFloat(v.Value, 'f', 1, 64)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s", v.Job, v.Model, v.Pool, v.BatchSize, v.DataFormat,
			base, val, runstate.FmtChange(v.Change), band, v.History, v.Verdict)
		if withTrust {
			line += "\t" + cmp.Or(string(v.Trust), "trusted")
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range rep.Verdicts {
		if v.Confirmation != nil {
			fmt.Fprintf(w, "%s %s: %s\n", v.Job, v.Series.Name(), gate.AttemptsText(v.Confirmation))
		}
	}
	if withTrust {
		fmt.Fprintf(w, "(untrusted: a job of the untrusted producer, %s)\n", strings.TrimPrefix(runstate.UntrustedNote, "untrusted: "))
	}
	writeOpen(w, rep.OpenRegressions())
	c := gate.CountVerdicts(rep.Verdicts)
	extra := ""
	if c.Unfinished > 0 {
		extra = fmt.Sprintf(", %d unfinished", c.Unfinished)
	}
	if c.NotReproduced > 0 {
		extra += fmt.Sprintf(", %d not reproduced", c.NotReproduced)
	}
	_, err := fmt.Fprintf(w, "gate %s: %d regression(s), %d failed%s, %d improved, %d ok, %d insufficient-history (%s)\n",
		rep.Outcome(), c.Regressions, c.Failed, extra, c.Improved, c.OK, c.InsufficientHistory, rep.Gate)
	return err
}

// WriteCompareTable prints a comparison of runs a and b (Compare) and a
// closing line with the series counts.
func WriteCompareTable(w io.Writer, c gate.Comparison, a, b string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "MODEL\tPOOL\tBATCH\tFORMAT\tRUNNER\t%s\t%s\tCHANGE\n", cutRun(a), cutRun(b))
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Model, r.Pool, r.BatchSize, r.DataFormat, r.Runner,
			rateOrStatus(r.A, r.AStatus), rateOrStatus(r.B, r.BStatus), runstate.FmtChange(r.Change))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(%d series in both runs", len(c.Rows))
	if len(c.OnlyA) > 0 {
		fmt.Fprintf(w, "; %d only in %s", len(c.OnlyA), a)
	}
	if len(c.OnlyB) > 0 {
		fmt.Fprintf(w, "; %d only in %s", len(c.OnlyB), b)
	}
	_, err := fmt.Fprintln(w, ")")
	return err
}

func rateOrStatus(v float64, s protocol.Status) string {
	if v > 0 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	if s == "" {
		return "-"
	}
	return string(s)
}

// cutRun is a run id cut to 24 bytes for a column head.
func cutRun(r string) string {
	if len(r) > 24 {
		return r[:24]
	}
	return r
}

// writeOpen lists open and accepted regressions, a line each, with the
// bisect command under an open one whose first bad commit is not known.
func writeOpen(w io.Writer, open []gate.OpenRegression) {
	for _, o := range open {
		fmt.Fprintln(w, o.Text())
		if o.IsOpen() && o.Bisect != "" {
			fmt.Fprintf(w, "  commits between %s and %s, if any, were not measured; find the first bad one: %s\n",
				runstate.ShortCommit(o.LastGood), runstate.ShortCommit(o.Since), o.Bisect)
		}
	}
}
