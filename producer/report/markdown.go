package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// WriteMarkdown writes r as a GitHub step summary: a heading with the
// outcome in one clear word (PASS, FAIL, REGRESSION or TIMED OUT), the
// counts, the waiter's warnings, the regressions, failures and unfinished
// jobs named with their reasons, then one table of
// every job with regressions first, then jobs that did not pass, then the
// rest (each group in manifest order). Columns: model, pool, batch,
// format, samples/sec, PCC, status, change vs baseline, verdict.
// What the results measured follows the counts (markdownBuilds).
func WriteMarkdown(w io.Writer, r *gate.RunReport) error {
	var b strings.Builder
	m := r.Manifest
	out := r.Outcome()
	passed, failed, regressions, improved := r.Counts()
	fmt.Fprintf(&b, "## benchfleet run `%s`: %s\n\n", m.Run, out)
	fmt.Fprintf(&b, "**%s**: %s, %d passed, %d failed", out, fmt.Sprintf("%d %s", len(r.Rows), runstate.Plural(len(r.Rows), "job", "jobs")), passed, failed)
	unfinished := r.Unfinished()
	if unfinished > 0 {
		fmt.Fprintf(&b, ", %d unfinished", unfinished)
	}
	if r.Verdicts != nil {
		fmt.Fprintf(&b, "; %d %s, %d improved", regressions, runstate.Plural(regressions, "regression", "regressions"), improved)
		if !r.GateOn && regressions > 0 {
			b.WriteString(" (gate off: reported, not enforced)")
		}
	}
	b.WriteString(".\n")
	if m.Source.Commit != "" || m.Source.Branch != "" {
		b.WriteString("\nSource:")
		if m.Source.Repo != "" {
			fmt.Fprintf(&b, " %s", mdCell(m.Source.Repo))
		}
		if m.Source.Branch != "" {
			fmt.Fprintf(&b, " branch `%s`", mdCode(m.Source.Branch))
		}
		if m.Source.Commit != "" {
			fmt.Fprintf(&b, " commit `%s`", mdCode(runstate.ShortCommit(m.Source.Commit)))
		}
		b.WriteString(".\n")
	}
	if r.Verdicts != nil {
		fmt.Fprintf(&b, "\nGate: %s.\n", mdCell(r.Gate.String()))
	}
	if r.Untrusted() {
		b.WriteString("\nTrust: **untrusted** (a run of the untrusted producer): its results are judged against trusted baselines and never enter one.\n")
	}
	if r.TimedOut && unfinished > 0 {
		fmt.Fprintf(&b, "\nThe waiting timed out with %d %s unfinished; the run goes on.\n", unfinished, runstate.Plural(unfinished, "job", "jobs"))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", escape.Markdown(w))
	}
	names := gate.CaseNames(r.Rows)
	nameOf := map[string]string{}
	for i, row := range r.Rows {
		nameOf[row.Job] = names[i]
	}
	b.WriteString(markdownBuilds(r.Rows, nameOf))
	ordered := markdownOrder(r.Rows)
	if regressions > 0 {
		b.WriteString("\n### Regressions\n\n")
		for _, row := range ordered {
			if row.Verdict == string(gate.VerdictRegression) {
				fmt.Fprintf(&b, "- `%s`: %s\n", mdCode(nameOf[row.Job]), mdCell(gate.RegressionText(r.VerdictOf(row.Job), r.Gate)))
			}
		}
	}
	if open := r.OpenRegressions(); len(open) > 0 {
		b.WriteString("\n### Open regressions\n\n")
		for _, o := range open {
			fmt.Fprintf(&b, "- %s\n", mdCell(o.Text()))
			if o.IsOpen() && o.Bisect != "" {
				fmt.Fprintf(&b, "  - commits between `%s` and `%s`, if any, were not measured; find the first bad one: `%s`\n",
					mdCode(runstate.ShortCommit(o.LastGood)), mdCode(runstate.ShortCommit(o.Since)), mdCode(o.Bisect))
			}
		}
	}
	var attempts strings.Builder
	for _, row := range ordered {
		if v := r.VerdictOf(row.Job); v != nil && v.Confirmation != nil {
			fmt.Fprintf(&attempts, "- `%s`: %s\n", mdCode(nameOf[row.Job]), mdCell(gate.AttemptsText(v.Confirmation)))
		}
	}
	if attempts.Len() > 0 {
		b.WriteString("\n### Confirmation repeats\n\n" + attempts.String())
	}
	if failed > 0 {
		b.WriteString("\n### Failures\n\n")
		for _, row := range ordered {
			if row.Status != protocol.StatusPassed && row.Status != "" {
				fmt.Fprintf(&b, "- `%s` (%s): %s\n", mdCode(nameOf[row.Job]), runstate.StatusWord(row.Status), escape.Markdown(oneLine(reasonOf(row))))
			}
		}
	}
	if unfinished > 0 {
		b.WriteString("\n### Unfinished\n\n")
		for _, row := range ordered {
			if row.Status == "" {
				fmt.Fprintf(&b, "- `%s`: %s\n", mdCode(nameOf[row.Job]), escape.Markdown(oneLine(reasonOf(row))))
			}
		}
	}
	b.WriteString("\n| model | pool | batch | format | samples/sec | PCC | status | change vs baseline | verdict |\n")
	b.WriteString("| --- | --- | ---: | --- | ---: | ---: | --- | ---: | --- |\n")
	for _, row := range ordered {
		verdict := row.Verdict
		if verdict == "" {
			verdict = "-"
		} else if verdict == string(gate.VerdictRegression) || verdict == string(gate.VerdictFailed) {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", mdCell(row.Model), mdCell(row.Pool), row.BatchSize,
			mdCell(row.DataFormat), row.JudgedRate(), runstate.FmtPCC(row.PCC), runstate.StatusWord(row.Status), runstate.FmtChange(row.Change), verdict)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownOrder puts regressions first, then jobs that did not pass, then
// the rest, each group in its original order.
func markdownOrder(rows []runstate.Row) []runstate.Row {
	rank := func(r runstate.Row) int {
		switch {
		case r.Verdict == string(gate.VerdictRegression):
			return 0
		case r.Status != protocol.StatusPassed:
			return 1
		default:
			return 2
		}
	}
	out := make([]runstate.Row, 0, len(rows))
	for k := 0; k <= 2; k++ {
		for _, r := range rows {
			if rank(r) == k {
				out = append(out, r)
			}
		}
	}
	return out
}

// mdCell makes s safe inside a table cell or a list item: one line, no
// control characters, pipes and angle brackets escaped. Text a job wrote
// (a reason) goes through escape.Markdown instead, which also stops links,
// images and emphasis.
func mdCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(escape.Control(s))
	return s
}

// mdCode makes s safe inside a `code span`.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(escape.Control(s))
}
