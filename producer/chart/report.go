package chart

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// ReportOptions configures WriteReportHTML.
type ReportOptions struct {
	// Title heads the page (default "benchfleet results").
	Title string
	// Query describes the filters that selected the results, shown under
	// the title (default: none shown).
	Query string
	// Now is the generation time printed in the footer (default time.Now()).
	Now time.Time
	// Gate is the rule that flags regressions (zero fields: the gate's
	// defaults).
	Gate gate.GateConfig
	// Acceptances are the acceptance records (gate.ReadAcceptances): an
	// accepted step down is listed as accepted, with its reason, not as
	// open (nil: none).
	Acceptances []gate.Acceptance
}

// ReportRow is one series' latest run in the report's table.
type ReportRow struct {
	Series gate.Series
	Name   string
	// Latest is the latest run's result (gate.SeriesPoint.Result);
	// Value is the run's samples/sec, the median of its passed results
	// when it has several (Attempts), the value Change and Judgement are of.
	Latest   *protocol.Result
	Value    float64
	Attempts int
	// Change is the relative change of Value against the series' previous
	// passed run on the baseline branch (not a bisect's or a pull
	// request's); nil when either is missing, Latest did not pass, or the
	// previous figure is zero.
	Change *float64
	// Judgement is the gate's rule applied to Value against the median of
	// the series' earlier passed runs (regression, improved, ok,
	// insufficient-history or failed).
	Judgement gate.Judgement
}

// ReportRows is the latest run of every series (TrendLines order; a run's
// results of a series are one point, gate.SeriesOpen), with its change
// against the previous passed run of that series and the gate's judgement
// (default gate.GateConfig) against the segment of the series' history on
// the baseline branch that it continues.
func ReportRows(rs []*protocol.Result) []ReportRow {
	rule, _ := gate.GateConfig{}.WithDefaults()
	rows, _ := reportRows(rs, rule, nil)
	return rows
}

// reportRows is ReportRows by rule, with the open and accepted
// regressions of every series (as) after its last run, each under the
// series' name in the report.
func reportRows(rs []*protocol.Result, rule gate.GateConfig, as []gate.Acceptance) ([]ReportRow, []gate.OpenRegression) {
	var rows []ReportRow
	var open []gate.OpenRegression
	for _, l := range TrendLines(rs) {
		pts, o := judgeLine(l, rule, as)
		for _, reg := range o {
			reg.Name = l.Name
			open = append(open, reg)
		}
		n := len(pts)
		last := pts[n-1]
		row := ReportRow{Series: l.Series, Name: l.Name, Latest: last.Result, Value: last.Value(), Attempts: last.Attempts(), Judgement: last.Judgement}
		if row.Latest.Status == protocol.StatusPassed {
			for i := n - 2; i >= 0; i-- {
				prev := pts[i]
				if prev.Result.Status != protocol.StatusPassed || !prev.OnBaseline {
					continue
				}
				if p := prev.Value(); p > 0 {
					c := (row.Value - p) / p
					row.Change = &c
				}
				break
			}
		}
		rows = append(rows, row)
	}
	return rows, open
}

type reportPage struct {
	Title, Query, Generated string
	Total, Series           int
	Open, Accepted          []openView
	Regressions             []reportRowView
	GateRule                string
	Statuses                []statusCount
	From, To                string
	SVG                     template.HTML
	Rows                    []reportRowView
}

// openView is how the report lists an open (or accepted) regression.
type openView struct {
	gate.OpenRegression
	Since, LastGood, Date, Before, Level, Now, Change, Runs string
	AcceptedOn                                              string
}

func newOpenView(o gate.OpenRegression) openView {
	v := openView{OpenRegression: o, Since: runstate.ShortCommit(cmp.Or(o.Since, "no commit")), LastGood: runstate.ShortCommit(o.LastGood),
		Date: o.At.UTC().Format("2006-01-02 15:04"), Before: runstate.FmtRate(o.Before), Level: runstate.FmtRate(o.Level),
		Now: runstate.FmtRate(o.Now), Change: runstate.FmtChange(&o.Change), Runs: runstate.Count(o.Runs, "run")}
	if a := o.Accepted; a != nil {
		v.AcceptedOn = a.At.UTC().Format("2006-01-02")
	}
	return v
}

type statusCount struct {
	Status protocol.Status
	N      int
}

type reportRowView struct {
	Name, Rate, PCC, Status, Commit, CommitFull, Run, Change, Created string
	Verdict, VerdictChange, VerdictClass, Baseline                    string
	Passed                                                            bool
	// Group is the model heading shown above the row (first row of a model).
	Group string
}

var reportTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child { max-width: 26em; overflow-wrap: anywhere; } td code { white-space: nowrap; }
tr.notpassed td { background: #fdecea; }
.worse { color: #c62828; font-weight: bold; } .better { color: #2e7d32; }
tr.group th { background: #f3f3f3; text-align: left; }
ul.regressions li, ul.open-regressions li { color: #c62828; margin: .3em 0; }
ul.accepted-regressions li { color: #555; margin: .3em 0; }
code.bisect { color: #222; background: #f3f3f3; padding: 0 .3em; }
.muted { color: #666; font-size: 90%; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Query}}<p class="muted">{{.Query}}</p>{{end}}
<h2>Summary</h2>
<ul class="summary">
<li>{{.Total}} results in {{.Series}} series, runs created {{.From}} to {{.To}} (UTC)</li>
{{range .Statuses}}<li class="status-{{.Status}}">{{.Status}}: {{.N}}</li>
{{end}}</ul>
<h2>Regressions</h2>
{{if .Open}}<h3>Open</h3>
<ul class="open-regressions">
{{range .Open}}<li class="open"><b>{{.Name}}</b>: open regression since commit <code title="{{.OpenRegression.Since}}">{{.Since}}</code> (run <code>{{.SinceRun}}</code>, {{.Date}} UTC): {{.Before}} → {{.Level}} samples/sec (<span class="worse">{{.Change}}</span>), {{.Runs}} since, now {{.Now}}{{if .OpenRegression.LastGood}}; last good <code title="{{.OpenRegression.LastGood}}">{{.LastGood}}</code> (run <code>{{.LastGoodRun}}</code>){{end}}{{with .Bisect}}<br>find the first bad commit: <code class="bisect">{{.}}</code> (DIR: a clone of the repository){{end}}</li>
{{end}}</ul>{{end}}
{{if .Accepted}}<h3>Accepted</h3>
<ul class="accepted-regressions">
{{range .Accepted}}<li class="accepted"><b>{{.Name}}</b>: accepted regression since commit <code title="{{.OpenRegression.Since}}">{{.Since}}</code> (run <code>{{.SinceRun}}</code>, {{.Date}} UTC): {{.Before}} → {{.Level}} samples/sec ({{.Change}}), {{.Runs}} since; accepted by {{.Accepted.By}} on {{.AcceptedOn}}: <q class="reason">{{.Accepted.Reason}}</q></li>
{{end}}</ul>{{end}}
{{if .Regressions}}<h3>Latest results judged regressions</h3>
<ul class="regressions">
{{range .Regressions}}<li><b>{{.Name}}</b>: {{.Rate}} samples/sec, {{.VerdictChange}} against {{.Baseline}} (run <code>{{.Run}}</code>, commit <code>{{.Commit}}</code>)</li>
{{end}}</ul>{{end}}
{{if not (or .Open .Accepted .Regressions)}}<p class="none">None: no series has an open regression, and no series' latest result is a regression by the gate's rule.</p>{{end}}
<p class="muted">{{.GateRule}}</p>
<h2>Samples/sec over time</h2>
{{.SVG}}
<h2 id="latest">Latest result per series</h2>
<table>
<thead><tr><th>Series</th><th>Samples/sec</th><th>PCC</th><th>Status</th><th>Verdict</th><th>Change vs baseline</th><th>Change vs previous</th><th>Commit</th><th>Run</th><th>Created (UTC)</th></tr></thead>
<tbody>
{{range .Rows}}{{if .Group}}<tr class="group"><th colspan="10">{{.Group}}</th></tr>
{{end}}<tr class="{{if not .Passed}}notpassed{{end}}"><td>{{.Name}}</td><td class="num">{{.Rate}}</td><td class="num">{{.PCC}}</td><td>{{.Status}}</td><td class="{{.VerdictClass}}">{{.Verdict}}</td><td class="num {{.VerdictClass}}" title="{{.Baseline}}">{{.VerdictChange}}</td><td class="num">{{.Change}}</td><td title="{{.CommitFull}}"><code>{{.Commit}}</code></td><td><code>{{.Run}}</code></td><td>{{.Created}}</td></tr>
{{end}}</tbody>
</table>
<p class="muted">Change vs baseline: samples/sec of the latest result against the level of the segment of the series' history it continues (the gate's baseline); only a regression or an improvement by the gate's rule is coloured. Change vs previous: against the previous passed result on the baseline branch. Generated {{.Generated}} by benchfleet.</p>
</body>
</html>
`))

// WriteReportHTML writes a self-contained HTML page about rs: a summary
// (counts by status, the range of run creation dates); the regressions:
// each series' open ones after its last run (gate.SeriesOpen: the first
// commit and run at the lower level, the levels and the change, the runs
// since, the last good commit, the bisect command), the accepted ones
// (o.Acceptances) with who accepted them and why, and the latest results
// judged regressions that are not the first run of one of those (a pull
// request's); the samples/sec trend (WriteTrendSVG) inlined; and a table
// of the latest result per series with samples/sec, PCC, status, the
// gate's verdict, commit, run and the change against the series' previous
// passed result on the baseline branch. Every value is HTML-escaped. rs
// must not be empty.
func WriteReportHTML(w io.Writer, rs []*protocol.Result, o ReportOptions) error {
	if len(rs) == 0 {
		return fmt.Errorf("report: no results to report")
	}
	if o.Title == "" {
		o.Title = "benchfleet results"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var svg bytes.Buffer
	if err := WriteTrendSVG(&svg, rs, TrendOptions{Metric: MetricSamplesPerSec, Gate: o.Gate, Acceptances: o.Acceptances,
		Title: "One panel per model; each y axis fitted to its passed results"}); err != nil {
		return err
	}
	// Inline the SVG element without its XML declaration.
	inline := svg.String()
	if i := strings.Index(inline, "<svg"); i >= 0 {
		inline = inline[i:]
	}
	page := reportPage{Title: o.Title, Query: o.Query, Generated: o.Now.UTC().Format(time.RFC3339), Total: len(rs),
		SVG: template.HTML(inline)} // built by WriteTrendSVG, every text in it escaped
	page.summarize(rs)
	rule, err := o.Gate.WithDefaults()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	page.GateRule = fmt.Sprintf("Gate rule: each series' history on %s is cut into segments where its level changed; a run is judged against the segment it continues: a drop of more than %s that is also outside %g·σ (σ = 1.4826·MAD, within segments) of the median of the segment's last %d runs; at least %d runs are needed. A step down stays an open regression until the series comes back to the level before it or someone accepts it (benchfleet results accept).",
		rule.BaselineBranch, strconv.FormatFloat(rule.Threshold*100, 'f', -1, 64)+"%", rule.NoiseK, rule.Window, rule.MinHistory)
	rows, open := reportRows(rs, rule, o.Acceptances)
	page.Series = len(rows)
	opened := map[string]bool{}
	for _, reg := range open {
		if reg.IsOpen() {
			page.Open = append(page.Open, newOpenView(reg))
		} else {
			page.Accepted = append(page.Accepted, newOpenView(reg))
		}
		opened[reg.Series.ID()+"@"+reg.SinceRun] = true
	}
	lastGroup := ""
	for _, row := range rows {
		v := rowView(row)
		if row.Series.Model != lastGroup {
			v.Group, lastGroup = row.Series.Model, row.Series.Model
		}
		if row.Judgement.Verdict == gate.VerdictRegression && !opened[row.Series.ID()+"@"+row.Latest.Run] {
			page.Regressions = append(page.Regressions, v)
		}
		page.Rows = append(page.Rows, v)
	}
	return reportTmpl.Execute(w, page)
}

// summarize counts rs by status (the known ones first, each shown) and
// finds the range of their run creation times.
func (page *reportPage) summarize(rs []*protocol.Result) {
	counts := map[protocol.Status]int{}
	from, to := rs[0].RunCreatedAt, rs[0].RunCreatedAt
	for _, r := range rs {
		counts[r.Status]++
		if r.RunCreatedAt.Before(from) {
			from = r.RunCreatedAt
		}
		if r.RunCreatedAt.After(to) {
			to = r.RunCreatedAt
		}
	}
	page.From, page.To = from.UTC().Format("2006-01-02 15:04"), to.UTC().Format("2006-01-02 15:04")
	known := []protocol.Status{protocol.StatusPassed, protocol.StatusFailed, protocol.StatusError, protocol.StatusTimeout, protocol.StatusCancelled}
	for _, s := range known {
		page.Statuses = append(page.Statuses, statusCount{s, counts[s]})
		delete(counts, s)
	}
	var other []protocol.Status
	for s := range counts {
		other = append(other, s)
	}
	sort.Slice(other, func(i, j int) bool { return other[i] < other[j] })
	for _, s := range other {
		page.Statuses = append(page.Statuses, statusCount{s, counts[s]})
	}
}

// rowView is how the report's table shows row (without its model heading).
func rowView(row ReportRow) reportRowView {
	r, j := row.Latest, row.Judgement
	rate := runstate.FmtRate(row.Value)
	if row.Attempts > 1 && r.Status == protocol.StatusPassed {
		rate += " (median)"
	}
	v := reportRowView{Name: row.Name, Rate: rate, PCC: runstate.FmtPCC(r.PCC.Value),
		Status: string(r.Status), Commit: runstate.ShortCommit(r.Source.Commit), CommitFull: r.Source.Commit, Run: r.Run,
		Created: r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), Change: runstate.FmtChange(row.Change),
		Passed: r.Status == protocol.StatusPassed, Verdict: string(j.Verdict), VerdictChange: "-"}
	if j.HasBaseline && r.Status == protocol.StatusPassed {
		v.VerdictChange = runstate.FmtChange(&j.Change)
		v.Baseline = fmt.Sprintf("level %s of its segment (median of %d runs)", runstate.FmtRate(j.Baseline), j.N)
	}
	switch j.Verdict {
	case gate.VerdictRegression:
		v.VerdictClass = "worse"
	case gate.VerdictImproved:
		v.VerdictClass = "better"
	}
	return v
}
