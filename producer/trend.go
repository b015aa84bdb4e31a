package producer

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Metric is a figure of a Result that a trend can plot.
type Metric string

// The metrics a trend can plot.
const (
	MetricSamplesPerSec Metric = "samples_per_sec"
	MetricPCC           Metric = "pcc"
	MetricP50           Metric = "p50_ms"
)

// Metrics lists every Metric, in the order help texts show them.
var Metrics = []Metric{MetricSamplesPerSec, MetricPCC, MetricP50}

// ParseMetric reads a metric name; the error lists the valid ones.
func ParseMetric(s string) (Metric, error) {
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown metric %q: want samples_per_sec, pcc or p50_ms", s)
}

// Of is the metric's value in r.
func (m Metric) Of(r *protocol.Result) float64 {
	switch m {
	case MetricPCC:
		return r.PCC.Value
	case MetricP50:
		return r.Measurements.IterationMS.P50
	default:
		return r.Measurements.SamplesPerSec
	}
}

// Label is the axis label of the metric.
func (m Metric) Label() string {
	switch m {
	case MetricPCC:
		return "PCC"
	case MetricP50:
		return "p50 iteration (ms)"
	default:
		return "samples/sec"
	}
}

// TrendLine is one series of a trend: its results, oldest first.
type TrendLine struct {
	Series Series
	// Name is the series' display name (Series.Name), with the runner and
	// test added when two series would otherwise share a name.
	Name    string
	Results []*protocol.Result
}

// TrendLines groups rs by series (sorted like Compare's series) and orders
// each series' results by run creation time, then run and job.
func TrendLines(rs []*protocol.Result) []TrendLine {
	g, order := groupSeries(rs)
	count := map[string]int{}
	for _, s := range order {
		count[s.Name()]++
	}
	lines := make([]TrendLine, 0, len(order))
	for _, s := range order {
		name := s.Name()
		if count[name] > 1 {
			name += "/" + s.Runner
			if s.Test != "" {
				name += "/" + s.Test
			}
		}
		res := append([]*protocol.Result(nil), g[s]...)
		sort.SliceStable(res, func(i, j int) bool { return resultBefore(res[i], res[j]) })
		lines = append(lines, TrendLine{Series: s, Name: name, Results: res})
	}
	return lines
}

func resultBefore(a, b *protocol.Result) bool {
	switch {
	case !a.RunCreatedAt.Equal(b.RunCreatedAt):
		return a.RunCreatedAt.Before(b.RunCreatedAt)
	case a.Run != b.Run:
		return a.Run < b.Run
	default:
		return a.Job < b.Job
	}
}

// TrendOptions configures WriteTrendSVG.
type TrendOptions struct {
	// Metric is the plotted figure (default MetricSamplesPerSec).
	Metric Metric
	// Title is drawn above the plot (default "<metric label> over time").
	Title string
	// Width is the image width in pixels (default 960, at least 480).
	Width int
}

// Plot geometry, in pixels.
const (
	svgMarginLeft   = 80
	svgMarginRight  = 24
	svgMarginTop    = 44
	svgPlotHeight   = 340
	svgAxisBelow    = 48
	svgLegendLine   = 18
	svgLegendMargin = 12
	// svgLegendColumn is the width of a legend column; names longer than
	// svgLegendColumnChars force a single column.
	svgLegendColumn      = 280
	svgLegendColumnChars = 34
	svgMinWidth          = 480
	svgDefaultWidth      = 960
)

// trendPalette colours the series in turn; after a full cycle the lines
// are dashed so that they stay distinguishable.
var trendPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79"}

// failColour marks results that did not pass.
const failColour = "#d62728"

// WriteTrendSVG draws rs as a self-contained SVG document: one polyline per
// series (TrendLines) through the metric of its passed results over run
// creation time, every passed result marked with a dot, every other result
// (failed, error, timeout, cancelled) with a red cross — at its value when it
// has one, else on the bottom axis. Axes carry labelled ticks (UTC dates or
// times, values) and a legend names each series. All text is XML-escaped.
// Times are shown in UTC. rs must not be empty.
func WriteTrendSVG(w io.Writer, rs []*protocol.Result, o TrendOptions) error {
	if len(rs) == 0 {
		return fmt.Errorf("trend: no results to draw")
	}
	if o.Metric == "" {
		o.Metric = MetricSamplesPerSec
	}
	if _, err := ParseMetric(string(o.Metric)); err != nil {
		return fmt.Errorf("trend: %w", err)
	}
	if o.Title == "" {
		o.Title = o.Metric.Label() + " over time"
	}
	if o.Width == 0 {
		o.Width = svgDefaultWidth
	}
	o.Width = max(o.Width, svgMinWidth)
	lines := TrendLines(rs)

	// Ranges: time over every result; values over passed results and
	// the figures that other results have.
	tmin, tmax := rs[0].RunCreatedAt, rs[0].RunCreatedAt
	vmin, vmax := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		if r.RunCreatedAt.Before(tmin) {
			tmin = r.RunCreatedAt
		}
		if r.RunCreatedAt.After(tmax) {
			tmax = r.RunCreatedAt
		}
		if v, ok := plotValue(o.Metric, r); ok {
			vmin, vmax = math.Min(vmin, v), math.Max(vmax, v)
		}
	}
	if math.IsInf(vmin, 0) {
		vmin, vmax = 0, 1
	}
	yTicks, ystep := niceTicks(vmin, vmax, 6)
	ylo, yhi := yTicks[0], yTicks[len(yTicks)-1]
	if tmax.Sub(tmin) < time.Minute {
		tmin, tmax = tmin.Add(-12*time.Hour), tmax.Add(12*time.Hour)
	}
	pad := tmax.Sub(tmin) / 50 // keep the first and last points off the frame
	tmin, tmax = tmin.Add(-pad), tmax.Add(pad)
	xTicks, xfmt := timeTicks(tmin, tmax, max(3, (o.Width-svgMarginLeft-svgMarginRight)/130))

	plotW := float64(o.Width - svgMarginLeft - svgMarginRight)
	x0, y0 := float64(svgMarginLeft), float64(svgMarginTop)
	xOf := func(t time.Time) float64 {
		return x0 + plotW*float64(t.Sub(tmin))/float64(tmax.Sub(tmin))
	}
	yOf := func(v float64) float64 {
		return y0 + svgPlotHeight*(1-(v-ylo)/(yhi-ylo))
	}
	// The legend fills columns of svgLegendColumn pixels, one column when a
	// name would not fit.
	cols := max(1, int(plotW)/svgLegendColumn)
	for _, l := range lines {
		if len(l.Name) > svgLegendColumnChars {
			cols = 1
		}
	}
	legendTop := svgMarginTop + svgPlotHeight + svgAxisBelow
	legendRows := (len(lines) + 1 + cols - 1) / cols
	legendAt := func(i int) (int, int) {
		return svgMarginLeft + (i/legendRows)*svgLegendColumn, legendTop + (i%legendRows)*svgLegendLine
	}
	height := legendTop + svgLegendLine*legendRows + svgLegendMargin

	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		o.Width, height, o.Width, height)
	p(`<title>%s</title>`+"\n", xmlText(o.Title))
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", svgMarginLeft, xmlText(o.Title))

	// Grid, ticks and tick labels.
	p(`<g class="y-axis" stroke="#e0e0e0">` + "\n")
	for _, v := range yTicks {
		y := yOf(v)
		p(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x0), f1(y), f1(x0+plotW), f1(y))
		p(`<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle" stroke="none" fill="#333">%s</text>`+"\n",
			f1(x0-6), f1(y), xmlText(fmtTick(v, ystep)))
	}
	p("</g>\n")
	p(`<g class="x-axis" stroke="#e0e0e0">` + "\n")
	for _, t := range xTicks {
		x := xOf(t)
		p(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(y0), f1(x), f1(y0+svgPlotHeight))
		p(`<text x="%s" y="%s" text-anchor="middle" stroke="none" fill="#333">%s</text>`+"\n",
			f1(x), f1(y0+svgPlotHeight+16), xmlText(t.UTC().Format(xfmt)))
	}
	p("</g>\n")
	p(`<rect x="%s" y="%s" width="%s" height="%d" fill="none" stroke="#333"/>`+"\n", f1(x0), f1(y0), f1(plotW), svgPlotHeight)
	p(`<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n",
		f1(y0+svgPlotHeight/2), f1(y0+svgPlotHeight/2), xmlText(o.Metric.Label()))
	p(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n",
		f1(x0+plotW/2), f1(y0+svgPlotHeight+36), "run created (UTC)")

	// One group per series: the line through passed results, their
	// markers, then the crosses of the others.
	for i, l := range lines {
		colour, dash := trendPalette[i%len(trendPalette)], ""
		if i >= len(trendPalette) {
			dash = ` stroke-dasharray="6 3"`
		}
		p(`<g class="series" data-series="%s">`+"\n", xmlText(l.Name))
		var pts []string
		for _, r := range l.Results {
			if r.Status == protocol.StatusPassed {
				v, _ := plotValue(o.Metric, r)
				pts = append(pts, f1(xOf(r.RunCreatedAt))+","+f1(yOf(v)))
			}
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
		for _, r := range l.Results {
			x := xOf(r.RunCreatedAt)
			v, ok := plotValue(o.Metric, r)
			tip := xmlText(fmt.Sprintf("%s\nrun %s, job %s\n%s UTC\ncommit %s\n%s: %s (%s)", l.Name, r.Run, r.Job,
				r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), ShortCommit(r.Source.Commit), o.Metric.Label(),
				strconv.FormatFloat(o.Metric.Of(r), 'g', 6, 64), r.Status))
			if r.Status == protocol.StatusPassed {
				p(`<circle cx="%s" cy="%s" r="3.5" fill="%s"><title>%s</title></circle>`+"\n", f1(x), f1(yOf(v)), colour, tip)
				continue
			}
			y := y0 + svgPlotHeight
			if ok {
				y = yOf(v)
			}
			p(`<path class="failed" d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="2"><title>%s</title></path>`+"\n",
				f1(x-4), f1(y-4), f1(x+4), f1(y+4), f1(x-4), f1(y+4), f1(x+4), f1(y-4), failColour, tip)
		}
		p("</g>\n")
	}

	// Legend.
	p(`<g class="legend">` + "\n")
	for i, l := range lines {
		x, y := legendAt(i)
		colour, dash := trendPalette[i%len(trendPalette)], ""
		if i >= len(trendPalette) {
			dash = ` stroke-dasharray="6 3"`
		}
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><circle cx="%d" cy="%d" r="3.5" fill="%s"/>`+"\n",
			x, y, x+24, y, colour, dash, x+12, y, colour)
		p(`<text x="%d" y="%d" dominant-baseline="middle">%s (%d)</text>`+"\n", x+32, y, xmlText(l.Name), len(l.Results))
	}
	x, y := legendAt(len(lines))
	p(`<path d="M%d %dL%d %dM%d %dL%d %d" stroke="%s" stroke-width="2"/>`+"\n", x+8, y-4, x+16, y+4, x+8, y+4, x+16, y-4, failColour)
	p(`<text x="%d" y="%d" dominant-baseline="middle">not passed</text>`+"\n", x+32, y)
	p("</g>\n</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// plotValue is r's figure and whether it has one to plot: a passed result
// always does; another only when its figure is a finite non-zero number.
func plotValue(m Metric, r *protocol.Result) (float64, bool) {
	v := m.Of(r)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, r.Status == protocol.StatusPassed || v != 0
}

// xmlText escapes s for XML text and attribute values.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceTicks returns at most about n+1 evenly spaced round values (steps of
// 1, 2 or 5 times a power of ten) covering [lo, hi], and the step.
func niceTicks(lo, hi float64, n int) ([]float64, float64) {
	if hi-lo < 1e-12*math.Max(1, math.Abs(hi)) {
		pad := math.Max(math.Abs(hi)*0.05, 1e-9)
		if lo == 0 && hi == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	var ticks []float64
	for i := 0; ; i++ {
		v := start + float64(i)*step
		if v > end+step/2 || i > 4*n {
			break
		}
		ticks = append(ticks, v)
	}
	return ticks, step
}

// fmtTick prints a tick value with just the decimals its step needs.
func fmtTick(v, step float64) string {
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(v) < step/2 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// timeTicks returns round UTC times within [lo, hi], at most about n, and the
// layout to print them with.
func timeTicks(lo, hi time.Time, n int) ([]time.Time, string) {
	const day = 24 * time.Hour
	steps := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
		3 * time.Hour, 6 * time.Hour, 12 * time.Hour, day, 2 * day, 7 * day, 14 * day, 28 * day, 91 * day, 182 * day, 364 * day}
	span := hi.Sub(lo)
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= time.Duration(n) {
			step = s
			break
		}
	}
	for span/step > time.Duration(n) {
		step *= 2
	}
	layout := "2006-01-02"
	if step < day {
		layout = "01-02 15:04"
	}
	var ticks []time.Time
	for t := lo.UTC().Truncate(step); !t.After(hi); t = t.Add(step) {
		if !t.Before(lo) {
			ticks = append(ticks, t)
		}
	}
	return ticks, layout
}

// ReportOptions configures WriteReportHTML.
type ReportOptions struct {
	// Title heads the page (default "benchfleet results").
	Title string
	// Query describes the filters that selected the results, shown under
	// the title (default: none shown).
	Query string
	// Now is the generation time printed in the footer (default time.Now()).
	Now time.Time
}

// ReportRow is one series' latest result in the report's table.
type ReportRow struct {
	Series Series
	Name   string
	Latest *protocol.Result
	// Change is the relative change in samples/sec of Latest against the
	// series' previous passed result; nil when either is missing, Latest
	// did not pass, or the previous figure is zero.
	Change *float64
}

// ReportRows is the latest result of every series (TrendLines order), with
// its change against the previous passed result of that series.
func ReportRows(rs []*protocol.Result) []ReportRow {
	var rows []ReportRow
	for _, l := range TrendLines(rs) {
		n := len(l.Results)
		row := ReportRow{Series: l.Series, Name: l.Name, Latest: l.Results[n-1]}
		if row.Latest.Status == protocol.StatusPassed {
			for i := n - 2; i >= 0; i-- {
				prev := l.Results[i]
				if prev.Status != protocol.StatusPassed {
					continue
				}
				if p := prev.Measurements.SamplesPerSec; p > 0 {
					c := (row.Latest.Measurements.SamplesPerSec - p) / p
					row.Change = &c
				}
				break
			}
		}
		rows = append(rows, row)
	}
	return rows
}

type reportPage struct {
	Title, Query, Generated string
	Total, Series           int
	Statuses                []statusCount
	From, To                string
	SVG                     template.HTML
	Rows                    []reportRowView
}

type statusCount struct {
	Status protocol.Status
	N      int
}

type reportRowView struct {
	Name, Rate, PCC, Status, Commit, CommitFull, Run, Change, ChangeClass, Created string
	Passed                                                                         bool
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
tr.notpassed td { background: #fdecea; }
.worse { color: #c62828; } .better { color: #2e7d32; }
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
<h2>Samples/sec over time</h2>
{{.SVG}}
<h2>Latest result per series</h2>
<table>
<thead><tr><th>Series</th><th>Samples/sec</th><th>PCC</th><th>Status</th><th>Commit</th><th>Run</th><th>Created (UTC)</th><th>Change vs previous</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{if not .Passed}}notpassed{{end}}"><td>{{.Name}}</td><td class="num">{{.Rate}}</td><td class="num">{{.PCC}}</td><td>{{.Status}}</td><td title="{{.CommitFull}}"><code>{{.Commit}}</code></td><td><code>{{.Run}}</code></td><td>{{.Created}}</td><td class="num {{.ChangeClass}}">{{.Change}}</td></tr>
{{end}}</tbody>
</table>
<p class="muted">Change is samples/sec of the latest result against the previous passed result of the same series. Generated {{.Generated}} by benchfleet.</p>
</body>
</html>
`))

// WriteReportHTML writes a self-contained HTML page about rs: a summary
// (counts by status, the range of run creation dates), the samples/sec trend
// (WriteTrendSVG) inlined, and a table of the latest result per series with
// samples/sec, PCC, status, commit, run and the change against the series'
// previous passed result. Every value is HTML-escaped. rs must not be empty.
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
	if err := WriteTrendSVG(&svg, rs, TrendOptions{Metric: MetricSamplesPerSec}); err != nil {
		return err
	}
	// Inline the SVG element without its XML declaration.
	inline := svg.String()
	if i := strings.Index(inline, "<svg"); i >= 0 {
		inline = inline[i:]
	}
	page := reportPage{Title: o.Title, Query: o.Query, Generated: o.Now.UTC().Format(time.RFC3339), Total: len(rs),
		SVG: template.HTML(inline)} // built by WriteTrendSVG, every text in it escaped
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
	rows := ReportRows(rs)
	page.Series = len(rows)
	for _, row := range rows {
		r := row.Latest
		v := reportRowView{Name: row.Name, Rate: fmtRate(r.Measurements.SamplesPerSec), PCC: fmtPCC(r.PCC.Value),
			Status: string(r.Status), Commit: ShortCommit(r.Source.Commit), CommitFull: r.Source.Commit, Run: r.Run,
			Created: r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), Change: FmtChange(row.Change),
			Passed: r.Status == protocol.StatusPassed}
		if row.Change != nil {
			switch {
			case *row.Change < 0:
				v.ChangeClass = "worse"
			case *row.Change > 0:
				v.ChangeClass = "better"
			}
		}
		page.Rows = append(page.Rows, v)
	}
	return reportTmpl.Execute(w, page)
}
