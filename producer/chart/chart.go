package chart

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

	gatepkg "github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
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
	Series gatepkg.Series
	// Name is the series' display name (Series.Name), with the runner and
	// test added when two series would otherwise share a name.
	Name    string
	Results []*protocol.Result
}

// TrendLines groups rs by series (sorted like Compare's series) and orders
// each series' results by run creation time, then run and job.
func TrendLines(rs []*protocol.Result) []TrendLine {
	g, order := gatepkg.GroupSeries(rs)
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
		sort.SliceStable(res, func(i, j int) bool { return gatepkg.ResultBefore(res[i], res[j]) })
		lines = append(lines, TrendLine{Series: s, Name: name, Results: res})
	}
	return lines
}

// TrendOptions configures WriteTrendSVG.
type TrendOptions struct {
	// Metric is the plotted figure (default MetricSamplesPerSec).
	Metric Metric
	// Title is drawn above the plot (default "<metric label> over time").
	Title string
	// Width is the image width in pixels (default 960, at least 480).
	Width int
	// Gate is the rule that flags a point as a regression (or an
	// improvement) against the earlier passed points of its series, as
	// `results gate` does; zero fields take the gate's defaults. Only
	// samples/sec is judged.
	Gate gatepkg.GateConfig
}

// Plot geometry, in pixels.
const (
	svgMarginLeft   = 80
	svgMarginRight  = 16
	svgTitleHeight  = 40
	svgPanelTitle   = 22
	svgPanelHeight  = 150
	svgPanelAxis    = 26
	svgPanelGap     = 18
	svgLegendWidth  = 210
	svgLegendLine   = 16
	svgFooterHeight = 66
	svgMinWidth     = 480
	svgDefaultWidth = 960
	// svgLegendChars is the longest series label the legend prints whole.
	svgLegendChars = 30
)

// trendPalette colours the series of a panel in turn; after a full cycle the
// lines are dashed so that they stay distinguishable.
var trendPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79"}

// Marker colours.
const (
	failColour       = "#d62728"
	regressionColour = "#d62728"
	improvedColour   = "#2ca02c"
)

// trendPanel is the series of one model: they share a y axis.
type trendPanel struct {
	Title string
	Lines []TrendLine
	// Points[i] are the runs of Lines[i], one point each, judged by the
	// gate's rule (judgeLine).
	Points [][]gatepkg.SeriesPoint
}

// trendPanels groups lines by model (TrendLines order), judging every
// run with the gate's rule against the earlier runs of its series.
func trendPanels(lines []TrendLine, gate gatepkg.GateConfig) []trendPanel {
	var panels []trendPanel
	index := map[string]int{}
	for _, l := range lines {
		key := l.Series.Model
		i, ok := index[key]
		if !ok {
			i = len(panels)
			index[key] = i
			panels = append(panels, trendPanel{Title: key})
		}
		panels[i].Lines = append(panels[i].Lines, l)
		panels[i].Points = append(panels[i].Points, judgeLine(l, gate))
	}
	return panels
}

// judgeLine folds a series' results into one point per run (a job and its
// confirmation repeats are one point, at the median of its passed
// results) and applies the gate's rule to each against the earlier runs
// (producer.JudgeSeries: the last Window of them, one value each); a run
// that did not pass is failed.
func judgeLine(l TrendLine, gate gatepkg.GateConfig) []gatepkg.SeriesPoint {
	return gatepkg.JudgeSeries(l.Results, gate, nil)
}

// pointValue is the metric's value of run point p: the median over the
// run's passed results when it has several (for samples/sec the value
// the gate judged), else plotValue of its result.
func pointValue(m Metric, p gatepkg.SeriesPoint) (float64, bool) {
	if len(p.Results) > 1 && p.Result.Status == protocol.StatusPassed {
		if m == MetricSamplesPerSec {
			return p.Value(), true
		}
		var vs []float64
		for _, r := range p.Results {
			if v, ok := plotValue(m, r); ok && r.Status == protocol.StatusPassed {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			sort.Float64s(vs)
			if n := len(vs); n%2 == 0 {
				return (vs[n/2-1] + vs[n/2]) / 2, true
			}
			return vs[len(vs)/2], true
		}
	}
	return plotValue(m, p.Result)
}

// WriteTrendSVG draws rs as a self-contained SVG document: one panel per
// model, stacked, sharing the time axis; in each panel one polyline per
// series (TrendLines) through the metric of its passed runs over run
// creation time, every passed run marked with a dot (a run is one point:
// its results of the series, a job and its confirmation repeats, at their
// Median). The y axis of a
// panel is fitted to its passed results (not from 0), so a 10% step shows
// as one. A result that did not pass is a red cross at its value when that
// lies inside the axis, else at the edge it is beyond (drawn as a triangle),
// and on the bottom edge when it has no value: it never sets the range. A
// samples/sec point the gate's rule judges a regression (TrendOptions.Gate)
// is ringed in red with its change; an improvement in green. Axes carry
// labelled ticks (UTC dates or times, values) and each panel's legend names
// its series. All text is XML-escaped. Times are shown in UTC. rs must not
// be empty.
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
	gate, err := o.Gate.WithDefaults()
	if err != nil {
		return fmt.Errorf("trend: %w", err)
	}
	if o.Title == "" {
		o.Title = o.Metric.Label() + " over time"
	}
	if o.Width == 0 {
		o.Width = svgDefaultWidth
	}
	o.Width = max(o.Width, svgMinWidth)
	panels := trendPanels(TrendLines(rs), gate)

	// The time axis is shared: every result.
	tmin, tmax := rs[0].RunCreatedAt, rs[0].RunCreatedAt
	for _, r := range rs {
		if r.RunCreatedAt.Before(tmin) {
			tmin = r.RunCreatedAt
		}
		if r.RunCreatedAt.After(tmax) {
			tmax = r.RunCreatedAt
		}
	}
	if tmax.Sub(tmin) < 10*time.Minute {
		mid := tmin.Add(tmax.Sub(tmin) / 2)
		tmin, tmax = mid.Add(-5*time.Minute), mid.Add(5*time.Minute)
	}
	pad := tmax.Sub(tmin) / 30 // keep the first and last points off the frame
	tmin, tmax = tmin.Add(-pad), tmax.Add(pad)

	legendW := svgLegendWidth
	if o.Width < 720 {
		legendW = 150
	}
	plotW := float64(o.Width - svgMarginLeft - svgMarginRight - legendW)
	x0 := float64(svgMarginLeft)
	xTicks, xfmt := timeTicks(tmin, tmax, max(3, int(plotW)/110))
	xOf := func(t time.Time) float64 {
		return x0 + plotW*float64(t.Sub(tmin))/float64(tmax.Sub(tmin))
	}
	panelH := svgPanelTitle + svgPanelHeight + svgPanelAxis + svgPanelGap
	height := svgTitleHeight + len(panels)*panelH + svgFooterHeight

	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		o.Width, height, o.Width, height)
	p(`<title>%s</title>`+"\n", xmlText(o.Title))
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", svgMarginLeft, xmlText(o.Title))

	for pi, pn := range panels {
		top := float64(svgTitleHeight + pi*panelH)
		y0 := top + svgPanelTitle
		// Fitted to the passed results of the panel.
		vmin, vmax := math.Inf(1), math.Inf(-1)
		for _, pts := range pn.Points {
			for _, pt := range pts {
				if v, ok := pointValue(o.Metric, pt); ok && pt.Result.Status == protocol.StatusPassed {
					vmin, vmax = math.Min(vmin, v), math.Max(vmax, v)
				}
			}
		}
		if math.IsInf(vmin, 0) { // nothing passed: fit the other figures
			for _, pts := range pn.Points {
				for _, pt := range pts {
					if v, ok := pointValue(o.Metric, pt); ok {
						vmin, vmax = math.Min(vmin, v), math.Max(vmax, v)
					}
				}
			}
		}
		if math.IsInf(vmin, 0) {
			vmin, vmax = 0, 1
		}
		if spread := vmax - vmin; spread < 0.02*math.Abs(vmax) {
			// A flat series: show ±2% around it, so noise is not magnified.
			mid := (vmax + vmin) / 2
			vmin, vmax = mid-0.02*math.Abs(mid), mid+0.02*math.Abs(mid)
		}
		// A margin of 8% keeps the extreme points off the frame.
		margin := 0.08 * (vmax - vmin)
		yTicks, ystep := niceTicks(vmin-margin, vmax+margin, 4)
		ylo, yhi := yTicks[0], yTicks[len(yTicks)-1]
		yOf := func(v float64) float64 {
			return y0 + svgPanelHeight*(1-(v-ylo)/(yhi-ylo))
		}

		p(`<g class="panel" data-panel="%s">`+"\n", xmlText(pn.Title))
		p(`<text x="%s" y="%s" font-size="13" font-weight="bold">%s</text>`+"\n", f1(x0), f1(top+15), xmlText(pn.Title))
		p(`<g class="y-axis" stroke="#e6e6e6">` + "\n")
		for _, v := range yTicks {
			y := yOf(v)
			p(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x0), f1(y), f1(x0+plotW), f1(y))
			p(`<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle" stroke="none" fill="#333">%s</text>`+"\n",
				f1(x0-6), f1(y), xmlText(fmtTick(v, ystep)))
		}
		p("</g>\n")
		p(`<g class="x-axis" stroke="#e6e6e6">` + "\n")
		for _, t := range xTicks {
			x := xOf(t)
			p(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(y0), f1(x), f1(y0+svgPanelHeight))
			p(`<text x="%s" y="%s" text-anchor="middle" stroke="none" fill="#333">%s</text>`+"\n",
				f1(x), f1(y0+svgPanelHeight+15), xmlText(t.UTC().Format(xfmt)))
		}
		p("</g>\n")
		p(`<rect x="%s" y="%s" width="%s" height="%d" fill="none" stroke="#333"/>`+"\n", f1(x0), f1(y0), f1(plotW), svgPanelHeight)
		p(`<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)" fill="#333">%s</text>`+"\n",
			f1(y0+svgPanelHeight/2), f1(y0+svgPanelHeight/2), xmlText(o.Metric.Label()))

		for i, l := range pn.Lines {
			colour, dash := trendPalette[i%len(trendPalette)], ""
			if i >= len(trendPalette) {
				dash = ` stroke-dasharray="6 3"`
			}
			p(`<g class="series" data-series="%s">`+"\n", xmlText(l.Name))
			var pts []string
			for _, pt := range pn.Points[i] {
				if pt.Result.Status == protocol.StatusPassed {
					v, _ := pointValue(o.Metric, pt)
					pts = append(pts, f1(xOf(pt.Result.RunCreatedAt))+","+f1(yOf(v)))
				}
			}
			p(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
			for _, pt := range pn.Points[i] {
				r := pt.Result
				x := xOf(r.RunCreatedAt)
				v, ok := pointValue(o.Metric, pt)
				j := pt.Judgement
				figure := "not measured"
				if ok && v != 0 {
					figure = strconv.FormatFloat(v, 'g', 6, 64)
				}
				if n := pt.Attempts(); n > 1 && r.Status == protocol.StatusPassed {
					figure += fmt.Sprintf(", median of %d attempts", n)
				}
				tipText := fmt.Sprintf("%s\nrun %s, job %s\n%s UTC\ncommit %s\n%s: %s (%s)", l.Name, r.Run, r.Job,
					r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), runstate.ShortCommit(r.Source.Commit), o.Metric.Label(), figure, r.Status)
				if j.HasBaseline && r.Status == protocol.StatusPassed {
					tipText += fmt.Sprintf("\n%s: %s vs median of %d earlier", j.Verdict, runstate.FmtChange(&j.Change), j.N)
				}
				tip := xmlText(tipText)
				if r.Status == protocol.StatusPassed {
					y := yOf(v)
					p(`<circle cx="%s" cy="%s" r="3.5" fill="%s"><title>%s</title></circle>`+"\n", f1(x), f1(y), colour, tip)
					if o.Metric == MetricSamplesPerSec && (j.Verdict == gatepkg.VerdictRegression || j.Verdict == gatepkg.VerdictImproved) {
						c, cls := regressionColour, "regression"
						if j.Verdict == gatepkg.VerdictImproved {
							c, cls = improvedColour, "improved"
						}
						p(`<g class="%s"><circle cx="%s" cy="%s" r="8" fill="none" stroke="%s" stroke-width="2"><title>%s</title></circle>`+
							`<text x="%s" y="%s" text-anchor="end" font-weight="bold" fill="%s">%s</text></g>`+"\n",
							cls, f1(x), f1(y), c, tip, f1(x-10), f1(y-8), c, xmlText(runstate.FmtChange(&j.Change)))
					}
					continue
				}
				// Not passed: at its value inside the axis, else at the edge.
				bottom, topEdge := y0+svgPanelHeight, y0
				switch {
				case !ok:
					p(`<path class="failed" d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="2"><title>%s</title></path>`+"\n",
						f1(x-4), f1(bottom-4), f1(x+4), f1(bottom+4), f1(x-4), f1(bottom+4), f1(x+4), f1(bottom-4), failColour, tip)
				case v > yhi:
					p(`<path class="failed off-scale" d="M%s %sL%s %sL%s %sZ" fill="%s"><title>%s</title></path>`+"\n",
						f1(x), f1(topEdge-1), f1(x-5), f1(topEdge+8), f1(x+5), f1(topEdge+8), failColour, tip)
				case v < ylo:
					p(`<path class="failed off-scale" d="M%s %sL%s %sL%s %sZ" fill="%s"><title>%s</title></path>`+"\n",
						f1(x), f1(bottom+1), f1(x-5), f1(bottom-8), f1(x+5), f1(bottom-8), failColour, tip)
				default:
					y := yOf(v)
					p(`<path class="failed" d="M%s %sL%s %sM%s %sL%s %s" stroke="%s" stroke-width="2"><title>%s</title></path>`+"\n",
						f1(x-4), f1(y-4), f1(x+4), f1(y+4), f1(x-4), f1(y+4), f1(x+4), f1(y-4), failColour, tip)
				}
			}
			p("</g>\n")
		}

		// The panel's legend, right of the plot: the series without the
		// panel's model.
		lx := int(x0+plotW) + 14
		p(`<g class="legend">` + "\n")
		for i, l := range pn.Lines {
			ly := int(y0) + 8 + i*svgLegendLine
			if ly > int(y0)+svgPanelHeight+svgPanelAxis-8 {
				p(`<text x="%d" y="%d" fill="#666">… %d more</text>`+"\n", lx, ly, len(pn.Lines)-i)
				break
			}
			colour, dash := trendPalette[i%len(trendPalette)], ""
			if i >= len(trendPalette) {
				dash = ` stroke-dasharray="6 3"`
			}
			label := strings.TrimPrefix(l.Name, pn.Title+"/")
			if len(label) > svgLegendChars {
				label = label[:svgLegendChars-1] + "…"
			}
			p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><circle cx="%d" cy="%d" r="3" fill="%s"/>`+"\n",
				lx, ly, lx+20, ly, colour, dash, lx+10, ly, colour)
			p(`<text x="%d" y="%d" dominant-baseline="middle"><title>%s</title>%s (%d)</text>`+"\n", lx+26, ly, xmlText(l.Name), xmlText(label), len(pn.Points[i]))
		}
		p("</g>\n</g>\n")
	}

	// Footer: the time axis' name and the key to the markers.
	fy := svgTitleHeight + len(panels)*panelH + 8
	p(`<g class="key">` + "\n")
	axis := "run created (UTC)"
	if sameDay(tmin, tmax) {
		axis = "run created (UTC, " + tmin.UTC().Format("2006-01-02") + ")"
	}
	p(`<text x="%s" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", f1(x0+plotW/2), fy, axis)
	ky := fy + 22
	kx := svgMarginLeft
	p(`<circle cx="%d" cy="%d" r="3.5" fill="#333"/><text x="%d" y="%d" dominant-baseline="middle">passed</text>`+"\n", kx+6, ky, kx+16, ky)
	kx += 80
	p(`<path d="M%d %dL%d %dM%d %dL%d %d" stroke="%s" stroke-width="2"/>`+"\n", kx+2, ky-4, kx+10, ky+4, kx+2, ky+4, kx+10, ky-4, failColour)
	p(`<text x="%d" y="%d" dominant-baseline="middle">not passed (▲▼ beyond the axis; on the bottom edge when not measured)</text>`+"\n", kx+16, ky)
	if o.Metric == MetricSamplesPerSec {
		kx, ky = svgMarginLeft, ky+20
		p(`<circle cx="%d" cy="%d" r="7" fill="none" stroke="%s" stroke-width="2"/>`+"\n", kx+6, ky, regressionColour)
		p(`<text x="%d" y="%d" dominant-baseline="middle">regression (the gate's rule): more than %s below, and outside %g·σ of, the median of the series' last %d earlier passed results</text>`+"\n",
			kx+18, ky, strconv.FormatFloat(gate.Threshold*100, 'f', -1, 64)+"%", gate.NoiseK, gate.Window)
	}
	p("</g>\n</svg>\n")
	_, err = w.Write(b.Bytes())
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

// timeTicks returns round UTC times within [lo, hi], about n and at least
// three when a step of a minute allows it, and the layout to print them
// with: times of day when the span is within one UTC day (the day is then
// in the axis title), else dates (with times for steps under a day).
func timeTicks(lo, hi time.Time, n int) ([]time.Time, string) {
	const day = 24 * time.Hour
	steps := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, day, 2 * day,
		7 * day, 14 * day, 28 * day, 91 * day, 182 * day, 364 * day}
	span := hi.Sub(lo)
	at := len(steps) - 1
	for i, s := range steps {
		if span/s <= time.Duration(n) {
			at = i
			break
		}
	}
	step := steps[at]
	for span/step > time.Duration(n) {
		step *= 2
	}
	ticksOf := func(step time.Duration) []time.Time {
		var ticks []time.Time
		for t := lo.UTC().Truncate(step); !t.After(hi); t = t.Add(step) {
			if !t.Before(lo) {
				ticks = append(ticks, t)
			}
		}
		return ticks
	}
	ticks := ticksOf(step)
	for len(ticks) < 3 && at > 0 && step == steps[at] {
		at--
		step = steps[at]
		ticks = ticksOf(step)
	}
	layout := "2006-01-02"
	switch {
	case sameDay(lo, hi):
		layout = "15:04"
	case step < day:
		layout = "01-02 15:04"
	}
	return ticks, layout
}

// sameDay reports whether a and b fall on one UTC date.
func sameDay(a, b time.Time) bool {
	return a.UTC().Format("2006-01-02") == b.UTC().Format("2006-01-02")
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
	// Gate is the rule that flags regressions (zero fields: the gate's
	// defaults).
	Gate gatepkg.GateConfig
}

// ReportRow is one series' latest run in the report's table.
type ReportRow struct {
	Series gatepkg.Series
	Name   string
	// Latest is the latest run's result (producer.SeriesPoint.Result);
	// Value is the run's samples/sec, the median of its passed results
	// when it has several (Attempts), the value Change and Judgement are of.
	Latest   *protocol.Result
	Value    float64
	Attempts int
	// Change is the relative change of Value against the series' previous
	// passed run's; nil when either is missing, Latest did not pass, or the
	// previous figure is zero.
	Change *float64
	// Judgement is the gate's rule applied to Value against the median of
	// the series' earlier passed runs (regression, improved, ok,
	// insufficient-history or failed).
	Judgement gatepkg.Judgement
}

// ReportRows is the latest run of every series (TrendLines order; a run's
// results of a series are one point, producer.JudgeSeries), with its change
// against the previous passed run of that series and the gate's judgement
// (default producer.GateConfig) against the earlier ones.
func ReportRows(rs []*protocol.Result) []ReportRow {
	gate, _ := gatepkg.GateConfig{}.WithDefaults()
	return reportRows(rs, gate)
}

func reportRows(rs []*protocol.Result, gate gatepkg.GateConfig) []ReportRow {
	var rows []ReportRow
	for _, l := range TrendLines(rs) {
		pts := judgeLine(l, gate)
		n := len(pts)
		last := pts[n-1]
		row := ReportRow{Series: l.Series, Name: l.Name, Latest: last.Result, Value: last.Value(), Attempts: last.Attempts(), Judgement: last.Judgement}
		if row.Latest.Status == protocol.StatusPassed {
			for i := n - 2; i >= 0; i-- {
				prev := pts[i]
				if prev.Result.Status != protocol.StatusPassed {
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
	return rows
}

type reportPage struct {
	Title, Query, Generated string
	Total, Series           int
	Regressions             []reportRowView
	GateRule                string
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
tr.notpassed td { background: #fdecea; }
.worse { color: #c62828; font-weight: bold; } .better { color: #2e7d32; }
tr.group th { background: #f3f3f3; text-align: left; }
ul.regressions li { color: #c62828; }
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
{{if .Regressions}}<ul class="regressions">
{{range .Regressions}}<li><b>{{.Name}}</b>: {{.Rate}} samples/sec, {{.VerdictChange}} against {{.Baseline}} (run <code>{{.Run}}</code>, commit <code>{{.Commit}}</code>)</li>
{{end}}</ul>{{else}}<p>None: no series' latest result is a regression by the gate's rule.</p>{{end}}
<p class="muted">{{.GateRule}}</p>
<h2>Samples/sec over time</h2>
{{.SVG}}
<h2 id="latest">Latest result per series</h2>
<table>
<thead><tr><th>producer.Series</th><th>Samples/sec</th><th>PCC</th><th>Status</th><th>Verdict</th><th>Change vs baseline</th><th>Change vs previous</th><th>Commit</th><th>Run</th><th>Created (UTC)</th></tr></thead>
<tbody>
{{range .Rows}}{{if .Group}}<tr class="group"><th colspan="10">{{.Group}}</th></tr>
{{end}}<tr class="{{if not .Passed}}notpassed{{end}}"><td>{{.Name}}</td><td class="num">{{.Rate}}</td><td class="num">{{.PCC}}</td><td>{{.Status}}</td><td class="{{.VerdictClass}}">{{.Verdict}}</td><td class="num {{.VerdictClass}}" title="{{.Baseline}}">{{.VerdictChange}}</td><td class="num">{{.Change}}</td><td title="{{.CommitFull}}"><code>{{.Commit}}</code></td><td><code>{{.Run}}</code></td><td>{{.Created}}</td></tr>
{{end}}</tbody>
</table>
<p class="muted">Change vs baseline: samples/sec of the latest result against the median of the series' earlier passed results (the gate's baseline); only a regression or an improvement by the gate's rule is coloured. Change vs previous: against the previous passed result. Generated {{.Generated}} by benchfleet.</p>
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
	if err := WriteTrendSVG(&svg, rs, TrendOptions{Metric: MetricSamplesPerSec, Gate: o.Gate,
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
	gate, err := o.Gate.WithDefaults()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	page.GateRule = fmt.Sprintf("Gate rule: a drop of more than %s that is also outside %g·σ (σ = 1.4826·MAD) of the median of the series' last %d earlier passed results; at least %d of them are needed.",
		strconv.FormatFloat(gate.Threshold*100, 'f', -1, 64)+"%", gate.NoiseK, gate.Window, gate.MinHistory)
	rows := reportRows(rs, gate)
	page.Series = len(rows)
	lastGroup := ""
	for _, row := range rows {
		r, j := row.Latest, row.Judgement
		rate := runstate.FmtRate(row.Value)
		if row.Attempts > 1 && r.Status == protocol.StatusPassed {
			rate += " (median)"
		}
		v := reportRowView{Name: row.Name, Rate: rate, PCC: runstate.FmtPCC(r.PCC.Value),
			Status: string(r.Status), Commit: runstate.ShortCommit(r.Source.Commit), CommitFull: r.Source.Commit, Run: r.Run,
			Created: r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), Change: runstate.FmtChange(row.Change),
			Passed: r.Status == protocol.StatusPassed, Verdict: string(j.Verdict), VerdictChange: "-"}
		if row.Series.Model != lastGroup {
			v.Group, lastGroup = row.Series.Model, row.Series.Model
		}
		if j.HasBaseline && r.Status == protocol.StatusPassed {
			v.VerdictChange = runstate.FmtChange(&j.Change)
			v.Baseline = fmt.Sprintf("median %s of %d earlier", runstate.FmtRate(j.Baseline), j.N)
		}
		switch j.Verdict {
		case gatepkg.VerdictRegression:
			v.VerdictClass = "worse"
			page.Regressions = append(page.Regressions, v)
		case gatepkg.VerdictImproved:
			v.VerdictClass = "better"
		}
		page.Rows = append(page.Rows, v)
	}
	return reportTmpl.Execute(w, page)
}
