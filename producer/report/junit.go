package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// The JUnit XML report: one <testsuite> for the run, one <testcase> per
// job named model/pool/bs<N>/<format>. A job that did not pass is a
// <failure> (benchmark failure: PCC, harness) or an <error> (infrastructure,
// timeout, cancelled, never finished); with the gate on, a regression is a
// <failure> of type "regression". Each testcase carries properties with
// the job id, samples/sec, PCC and, when compared, the baseline, change and
// verdict.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Failure    *junitProblem   `xml:"failure,omitempty"`
	Error      *junitProblem   `xml:"error,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes r as JUnit XML.
func WriteJUnit(w io.Writer, r *gate.RunReport) error {
	m := r.Manifest
	suite := junitSuite{Name: "benchfleet run " + m.Run}
	if !m.CreatedAt.IsZero() {
		suite.Timestamp = m.CreatedAt.UTC().Format("2006-01-02T15:04:05")
	}
	props := []junitProperty{{"run", m.Run}}
	for _, p := range [][2]string{{"repo", m.Source.Repo}, {"commit", m.Source.Commit}, {"branch", m.Source.Branch},
		{"project", m.Source.Project}, {"priority", string(m.Priority)}} {
		if p[1] != "" {
			props = append(props, junitProperty{p[0], p[1]})
		}
	}
	if r.Verdicts != nil {
		props = append(props, junitProperty{"baseline_branch", r.Gate.BaselineBranch},
			junitProperty{"gate", strconv.FormatBool(r.GateOn)}, junitProperty{"gate_config", r.Gate.String()})
	}
	props = append(props, junitProperty{"outcome", string(r.Outcome())})
	if r.Untrusted() {
		props = append(props, junitProperty{"trust", string(protocol.TrustUntrusted)})
	}
	suite.Properties = props
	var total float64
	names := gate.CaseNames(r.Rows)
	for i, row := range r.Rows {
		c := junitCase{Name: names[i], Classname: "benchfleet." + row.Pool}
		secs := rowSeconds(row)
		total += secs
		c.Time = strconv.FormatFloat(secs, 'f', 3, 64)
		c.Properties = caseProperties(row)
		v := r.VerdictOf(row.Job)
		switch {
		case row.Status == protocol.StatusFailed:
			c.Failure = &junitProblem{Type: "failed", Message: oneLine(reasonOf(row)), Text: problemText(row)}
			suite.Failures++
		case row.Status != protocol.StatusPassed:
			typ := string(row.Status)
			if typ == "" {
				typ = "unfinished"
			}
			c.Error = &junitProblem{Type: typ, Message: oneLine(reasonOf(row)), Text: problemText(row)}
			suite.Errors++
		case row.Verdict == string(gate.VerdictRegression) && r.GateOn:
			msg := gate.RegressionText(v, r.Gate)
			if v.Confirmation != nil {
				msg += "; " + gate.AttemptsText(v.Confirmation)
			}
			c.Failure = &junitProblem{Type: "regression", Message: "performance regression: " + msg, Text: msg}
			suite.Failures++
		}
		if row.Verdict != "" && c.Failure == nil && c.Error == nil && v != nil {
			if t := gate.RegressionText(v, r.Gate); t != "" {
				c.SystemOut = "verdict " + row.Verdict + ": " + t
			}
		}
		if v != nil && v.Confirmation != nil {
			c.Properties = append(c.Properties, attemptProperties(v.Confirmation)...)
			if c.Failure == nil {
				c.SystemOut = strings.TrimPrefix(c.SystemOut+"\n", "\n") + gate.AttemptsText(v.Confirmation)
			}
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	suite.Time = strconv.FormatFloat(total, 'f', 3, 64)
	doc := junitSuites{Name: "benchfleet", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func caseProperties(row runstate.Row) []junitProperty {
	p := []junitProperty{{"job", row.Job}, {"status", runstate.StatusWord(row.Status)}}
	if row.Runner != "" {
		p = append(p, junitProperty{"runner", row.Runner})
	}
	if v := row.JudgedValue(); v > 0 { // what change is of: the median of a confirmed row's attempts
		p = append(p, junitProperty{"samples_per_sec", strconv.FormatFloat(v, 'f', 3, 64)})
	}
	if row.PCC != 0 {
		p = append(p, junitProperty{"pcc", strconv.FormatFloat(row.PCC, 'f', -1, 64)})
	}
	if row.Result != nil && row.Result.PCC.Min > 0 {
		p = append(p, junitProperty{"pcc_min", strconv.FormatFloat(row.Result.PCC.Min, 'f', -1, 64)})
	}
	if row.Attempt > 0 {
		p = append(p, junitProperty{"attempt", strconv.Itoa(row.Attempt)})
	}
	if row.Change != nil {
		p = append(p, junitProperty{"change", strconv.FormatFloat(*row.Change, 'f', 6, 64)})
	}
	if row.Verdict != "" {
		p = append(p, junitProperty{"verdict", row.Verdict})
	}
	if row.Result != nil && row.Result.Worker.ID != "" {
		p = append(p, junitProperty{"worker", row.Result.Worker.ID}, junitProperty{"device", row.Result.Device.ID})
	}
	if row.Untrusted() {
		p = append(p, junitProperty{"trust", string(protocol.TrustUntrusted)})
	}
	return p
}

func rowSeconds(row runstate.Row) float64 {
	if row.Result == nil || row.Result.StartedAt.IsZero() || row.Result.FinishedAt.Before(row.Result.StartedAt) {
		return 0
	}
	return row.Result.FinishedAt.Sub(row.Result.StartedAt).Round(time.Millisecond).Seconds()
}

func reasonOf(row runstate.Row) string {
	if row.Reason != "" {
		if row.Status == "" {
			return "did not finish (" + row.Reason + ")"
		}
		return row.Reason
	}
	if row.Status == "" {
		return "did not finish"
	}
	return "job " + string(row.Status)
}

func problemText(row runstate.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: %s\n", row.Job, runstate.StatusWord(row.Status))
	if row.Result != nil && row.Result.Error != nil {
		fmt.Fprintf(&b, "class: %s\n", row.Result.Error.Class)
	}
	if row.PCC != 0 {
		fmt.Fprintf(&b, "pcc: %s", runstate.FmtPCC(row.PCC))
		if row.Result != nil && row.Result.PCC.Min > 0 {
			fmt.Fprintf(&b, " (required %s)", strconv.FormatFloat(row.Result.PCC.Min, 'f', -1, 64))
		}
		b.WriteString("\n")
	}
	b.WriteString(reasonOf(row))
	return b.String()
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return runstate.Shorten(s, 200)
}

// attemptProperties are a confirmed job's attempts as testcase
// properties, named apart from the testcase's own attempt (the delivery
// that produced the original's result): confirmation.attempts (how many),
// confirmation.attempt.<n> (samples/sec or status and board of each, the
// original 0), confirmation.median, confirmation.reproduced (true, false,
// or pending while a repeat has not ended).
func attemptProperties(c *gate.Confirmation) []junitProperty {
	const pre = "confirmation."
	p := []junitProperty{{pre + "attempts", strconv.Itoa(len(c.Attempts))}}
	for _, a := range c.Attempts {
		v := strconv.FormatFloat(a.SamplesPerSec, 'f', 3, 64)
		if a.Status != protocol.StatusPassed {
			v = runstate.StatusWord(a.Status)
		}
		if a.Board != "" {
			v += " on " + a.Board
		}
		p = append(p, junitProperty{pre + "attempt." + strconv.Itoa(a.Repeat), v})
	}
	reproduced := strconv.FormatBool(c.Reproduced)
	if c.Pending {
		reproduced = "pending"
	}
	return append(p, junitProperty{pre + "median", strconv.FormatFloat(c.Median, 'f', 3, 64)}, junitProperty{pre + "reproduced", reproduced})
}
