package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// GateNotice is the notification of a gated run that did not pass: its
// regressed and failed jobs (never the ones that were ok, improved or had
// too little history), by how much, the run, its commit and a link. ok is
// false when there is nothing to tell (the run passed). key identifies the
// news: the same run with the same regressed and failed jobs has the same
// key, so a deduplicating notifier sends it once.
func GateNotice(rep *gate.RunReport) (key string, m protocol.Notification, ok bool) {
	out := rep.Outcome()
	if out == gate.OutcomePass {
		return "", protocol.Notification{}, false
	}
	man := rep.Manifest
	m = protocol.Notification{Event: protocol.NotifyRegression, Time: time.Now().UTC(), Run: man.Run, Outcome: string(out),
		Repo: man.Source.Repo, Commit: man.Source.Commit, Branch: man.Source.Branch, Link: runLink(rep)}
	byJob := map[string]gate.GateRow{}
	for _, v := range rep.Verdicts {
		byJob[v.Job] = v
	}
	for _, row := range rep.Rows {
		v, judged := byJob[row.Job]
		failed := row.Status != protocol.StatusPassed
		if !failed && (!judged || v.Verdict != gate.VerdictRegression) {
			continue
		}
		s := protocol.NotificationSeries{Job: row.Job, Model: row.Model, Pool: row.Pool, BatchSize: row.BatchSize,
			DataFormat: row.DataFormat, Value: row.SamplesPerSec, Verdict: string(gate.VerdictRegression)}
		if judged {
			s.Baseline, s.Change = v.Baseline, v.Change
		}
		if failed {
			s.Verdict, s.Reason = string(gate.VerdictFailed), row.Reason
			if s.Reason == "" {
				s.Reason = "status " + string(row.Status)
				if row.Status == "" {
					s.Reason = "no result"
				}
			}
		}
		m.Series = append(m.Series, s)
	}
	// Regressions first, then failures; each by model.
	sort.SliceStable(m.Series, func(i, j int) bool {
		if m.Series[i].Verdict != m.Series[j].Verdict {
			return m.Series[i].Verdict == string(gate.VerdictRegression)
		}
		return m.Series[i].Model < m.Series[j].Model
	})
	for _, o := range rep.OpenRegressions() {
		m.OpenRegressions = append(m.OpenRegressions, o.Text())
	}
	m.Text = noticeText(m)
	parts := []string{"regression", man.Run}
	for _, s := range m.Series {
		parts = append(parts, s.Job+"="+s.Verdict)
	}
	sort.Strings(parts[2:])
	return strings.Join(parts, "/"), m, true
}

// runLink is the run's CI run URL, from the manifest or its results.
func runLink(rep *gate.RunReport) string {
	if u := rep.Manifest.Source.CIRunURL; u != "" {
		return u
	}
	for _, row := range rep.Rows {
		if row.Result != nil && row.Result.Source.CIRunURL != "" {
			return row.Result.Source.CIRunURL
		}
	}
	return ""
}

func noticeText(m protocol.Notification) string {
	var b strings.Builder
	regressed, failed := 0, 0
	for _, s := range m.Series {
		if s.Verdict == string(gate.VerdictFailed) {
			failed++
		} else {
			regressed++
		}
	}
	fmt.Fprintf(&b, "benchfleet gate %s: run %s", m.Outcome, m.Run)
	if m.Commit != "" {
		c := m.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if m.Repo != "" {
			fmt.Fprintf(&b, " (%s@%s", m.Repo, c)
		} else {
			fmt.Fprintf(&b, " (commit %s", c)
		}
		if m.Branch != "" {
			fmt.Fprintf(&b, " on %s", m.Branch)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %d regression(s), %d failed", regressed, failed)
	for _, s := range m.Series {
		fmt.Fprintf(&b, "\n• %s (%s, batch %d, %s): ", s.Model, s.Pool, s.BatchSize, s.DataFormat)
		if s.Verdict == string(gate.VerdictFailed) {
			fmt.Fprintf(&b, "failed: %s", runstate.Shorten(s.Reason, 160))
			continue
		}
		fmt.Fprintf(&b, "%.1f samples/s", s.Value)
		if s.Baseline != nil {
			fmt.Fprintf(&b, " vs baseline %.1f (%s)", *s.Baseline, runstate.FmtChange(s.Change))
		}
	}
	for _, o := range m.OpenRegressions {
		fmt.Fprintf(&b, "\n• %s", runstate.Shorten(o, 300))
	}
	if m.Link != "" {
		fmt.Fprintf(&b, "\n%s", m.Link)
	}
	return b.String()
}

// GateStatus is the GitHub commit status of a gated run: success when it
// passed, failure otherwise, with its counts as the description.
func GateStatus(rep *gate.RunReport) protocol.CommitStatus {
	passed, failed, regressions, _ := rep.Counts()
	st := protocol.CommitStatus{State: protocol.CommitSuccess, TargetURL: runLink(rep), Context: "benchfleet/gate"}
	if rep.Outcome() != gate.OutcomePass {
		st.State = protocol.CommitFailure
	}
	st.Description = fmt.Sprintf("%s: %d passed, %d failed, %d regression(s) — run %s", rep.Outcome(), passed, failed, regressions, rep.Manifest.Run)
	return st
}
