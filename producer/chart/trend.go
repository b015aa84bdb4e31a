package chart

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

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
	Gate gate.GateConfig
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

// Marker colours of the gate's verdicts.
const (
	regressionColour = "#d62728"
	improvedColour   = "#2ca02c"
)

// trendPanel is the series of one model: they share a y axis.
type trendPanel struct {
	Title string
	Lines []TrendLine
	// Points[i] are the runs of Lines[i], one point each, judged by the
	// gate's rule (judgeLine).
	Points [][]gate.SeriesPoint
}

// trendPanels groups lines by model (TrendLines order), judging every
// run with the gate's rule against the earlier runs of its series.
func trendPanels(lines []TrendLine, rule gate.GateConfig) []trendPanel {
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
		panels[i].Points = append(panels[i].Points, judgeLine(l, rule))
	}
	return panels
}

// judgeLine folds a series' results into one point per run (a job and its
// confirmation repeats are one point, at the median of its passed
// results) and applies the gate's rule to each against the earlier runs
// (gate.JudgeSeries: the last Window of them, one value each); a run
// that did not pass is failed.
func judgeLine(l TrendLine, rule gate.GateConfig) []gate.SeriesPoint {
	return gate.JudgeSeries(l.Results, rule, nil)
}

// pointValue is the metric's value of run point p: the median over the
// run's passed results when it has several (for samples/sec the value
// the gate judged), else plotValue of its result.
func pointValue(m Metric, p gate.SeriesPoint) (float64, bool) {
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

// plotValue is r's figure and whether it has one to plot: a passed result
// always does; another only when its figure is a finite non-zero number.
func plotValue(m Metric, r *protocol.Result) (float64, bool) {
	v := m.Of(r)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, r.Status == protocol.StatusPassed || v != 0
}

// trend is one drawing of WriteTrendSVG: its options, panels and the
// time axis they share.
type trend struct {
	o      TrendOptions
	rule   gate.GateConfig
	panels []trendPanel
	// tlo and thi are the earliest and latest run creation times.
	tlo, thi time.Time
	legendW  int
	plotW    float64
}

// WriteTrendSVG draws rs as a self-contained SVG document: one panel per
// model, stacked, sharing the time axis; in each panel one polyline per
// series (TrendLines) through the metric of its passed runs over run
// creation time, every passed run marked with a dot (a run is one point:
// its results of the series, a job and its confirmation repeats, at their
// median). The y axis of a
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
	t, err := newTrend(rs, o)
	if err != nil {
		return err
	}
	var b svgBuf
	t.writeHead(&b)
	for i := range t.panels {
		t.writePanel(&b, i)
	}
	t.writeKey(&b)
	_, err = w.Write(b.Bytes())
	return err
}

// newTrend checks o, fills its defaults and lays out the panels of rs.
func newTrend(rs []*protocol.Result, o TrendOptions) (*trend, error) {
	if len(rs) == 0 {
		return nil, fmt.Errorf("trend: no results to draw")
	}
	if o.Metric == "" {
		o.Metric = MetricSamplesPerSec
	}
	if _, err := ParseMetric(string(o.Metric)); err != nil {
		return nil, fmt.Errorf("trend: %w", err)
	}
	rule, err := o.Gate.WithDefaults()
	if err != nil {
		return nil, fmt.Errorf("trend: %w", err)
	}
	if o.Title == "" {
		o.Title = o.Metric.Label() + " over time"
	}
	if o.Width == 0 {
		o.Width = svgDefaultWidth
	}
	o.Width = max(o.Width, svgMinWidth)
	t := &trend{o: o, rule: rule, panels: trendPanels(TrendLines(rs), rule),
		tlo: rs[0].RunCreatedAt, thi: rs[0].RunCreatedAt, legendW: svgLegendWidth}
	// The time axis is shared: every result.
	for _, r := range rs {
		if r.RunCreatedAt.Before(t.tlo) {
			t.tlo = r.RunCreatedAt
		}
		if r.RunCreatedAt.After(t.thi) {
			t.thi = r.RunCreatedAt
		}
	}
	if o.Width < 720 {
		t.legendW = 150
	}
	t.plotW = float64(o.Width - svgMarginLeft - svgMarginRight - t.legendW)
	return t, nil
}

// panelH is the height of one panel with its title, axis and gap.
const panelH = svgPanelTitle + svgPanelHeight + svgPanelAxis + svgPanelGap

func (t *trend) height() int { return svgTitleHeight + len(t.panels)*panelH + svgFooterHeight }

// writeHead opens the document: its size, title and background.
func (t *trend) writeHead(b *svgBuf) {
	w, h := t.o.Width, t.height()
	b.f(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		w, h, w, h)
	b.f(`<title>%s</title>`+"\n", xmlText(t.o.Title))
	b.f(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	b.f(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", svgMarginLeft, xmlText(t.o.Title))
}

// plotOf is the plot of panel i, its y axis fitted to the panel's passed
// results (else to its other figures).
func (t *trend) plotOf(i int) *plot {
	top := float64(svgTitleHeight + i*panelH)
	passed, other := emptySpan(), emptySpan()
	for _, pts := range t.panels[i].Points {
		for _, pt := range pts {
			v, ok := pointValue(t.o.Metric, pt)
			if !ok {
				continue
			}
			if pt.Result.Status == protocol.StatusPassed {
				passed.add(v)
			}
			other.add(v)
		}
	}
	return newPlot(svgMarginLeft, top+svgPanelTitle, t.plotW, svgPanelHeight, t.tlo, t.thi, passed, other)
}

// writePanel draws panel i: its title, axes, series and legend.
func (t *trend) writePanel(b *svgBuf, i int) {
	pn, p := t.panels[i], t.plotOf(i)
	b.f(`<g class="panel" data-panel="%s">`+"\n", xmlText(pn.Title))
	b.f(`<text x="%s" y="%s" font-size="13" font-weight="bold">%s</text>`+"\n", f1(p.x0), f1(p.y0-svgPanelTitle+15), xmlText(pn.Title))
	p.writeAxes(b, t.o.Metric.Label())
	for li, l := range pn.Lines {
		t.writeLine(b, p, l, pn.Points[li], li)
	}
	t.writeLegend(b, p, pn)
	b.f("</g>\n")
}

// lineStyle is the colour and dash attribute of a panel's i-th line.
func lineStyle(i int) (string, string) {
	if i >= len(trendPalette) {
		return trendPalette[i%len(trendPalette)], ` stroke-dasharray="6 3"`
	}
	return trendPalette[i], ""
}

// writeLine draws series l of a panel, its i-th: the line through its
// passed runs and a marker per run.
func (t *trend) writeLine(b *svgBuf, p *plot, l TrendLine, pts []gate.SeriesPoint, i int) {
	colour, dash := lineStyle(i)
	b.f(`<g class="series" data-series="%s">`+"\n", xmlText(l.Name))
	var line []string
	for _, pt := range pts {
		if pt.Result.Status == protocol.StatusPassed {
			v, _ := pointValue(t.o.Metric, pt)
			line = append(line, xy(p.x(pt.Result.RunCreatedAt), p.y(v)))
		}
	}
	polyline(b, fmt.Sprintf(` fill="none" stroke="%s" stroke-width="2"%s`, colour, dash), line, "")
	b.f("\n")
	for _, pt := range pts {
		t.writePoint(b, p, l, pt, colour)
	}
	b.f("</g>\n")
}

// writePoint draws run pt of series l: a dot when it passed, ringed when
// the gate's rule flags it, else writeNotPassed's marker.
func (t *trend) writePoint(b *svgBuf, p *plot, l TrendLine, pt gate.SeriesPoint, colour string) {
	r := pt.Result
	v, ok := pointValue(t.o.Metric, pt)
	m := marker{x: p.x(r.RunCreatedAt), title: t.tip(l, pt, v, ok)}
	if r.Status != protocol.StatusPassed {
		p.writeNotPassed(b, m, v, ok, 4)
		b.f("\n")
		return
	}
	m.y, m.style = p.y(v), fmt.Sprintf(` fill="%s"`, colour)
	m.dot(b, 3.5)
	b.f("\n")
	j := pt.Judgement
	if t.o.Metric != MetricSamplesPerSec || (j.Verdict != gate.VerdictRegression && j.Verdict != gate.VerdictImproved) {
		return
	}
	c, cls := regressionColour, "regression"
	if j.Verdict == gate.VerdictImproved {
		c, cls = improvedColour, "improved"
	}
	b.f(`<g class="%s">`, cls)
	m.style = fmt.Sprintf(` fill="none" stroke="%s" stroke-width="2"`, c)
	m.dot(b, 8)
	b.f(`<text x="%s" y="%s" text-anchor="end" font-weight="bold" fill="%s">%s</text></g>`+"\n",
		f1(m.x-10), f1(m.y-8), c, xmlText(runstate.FmtChange(&j.Change)))
}

// tip is the hover text of run pt of series l, its figure v (ok: it has
// one).
func (t *trend) tip(l TrendLine, pt gate.SeriesPoint, v float64, ok bool) string {
	r, j := pt.Result, pt.Judgement
	figure := "not measured"
	if ok && v != 0 {
		figure = strconv.FormatFloat(v, 'g', 6, 64)
	}
	if n := pt.Attempts(); n > 1 && r.Status == protocol.StatusPassed {
		figure += fmt.Sprintf(", median of %d attempts", n)
	}
	tip := fmt.Sprintf("%s\nrun %s, job %s\n%s UTC\ncommit %s\n%s: %s (%s)", l.Name, r.Run, r.Job,
		r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), runstate.ShortCommit(r.Source.Commit), t.o.Metric.Label(), figure, r.Status)
	if j.HasBaseline && r.Status == protocol.StatusPassed {
		tip += fmt.Sprintf("\n%s: %s vs median of %d earlier", j.Verdict, runstate.FmtChange(&j.Change), j.N)
	}
	return tip
}

// writeLegend draws the panel's legend right of its plot: the series
// without the panel's model, each with its number of runs.
func (t *trend) writeLegend(b *svgBuf, p *plot, pn trendPanel) {
	lx, y0 := int(p.x0+p.w)+14, int(p.y0)
	b.f(`<g class="legend">` + "\n")
	for i, l := range pn.Lines {
		ly := y0 + 8 + i*svgLegendLine
		if ly > y0+svgPanelHeight+svgPanelAxis-8 {
			b.f(`<text x="%d" y="%d" fill="#666">… %d more</text>`+"\n", lx, ly, len(pn.Lines)-i)
			break
		}
		colour, dash := lineStyle(i)
		label := strings.TrimPrefix(l.Name, pn.Title+"/")
		if len(label) > svgLegendChars {
			label = label[:svgLegendChars-1] + "…"
		}
		b.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><circle cx="%d" cy="%d" r="3" fill="%s"/>`+"\n",
			lx, ly, lx+20, ly, colour, dash, lx+10, ly, colour)
		b.f(`<text x="%d" y="%d" dominant-baseline="middle"><title>%s</title>%s (%d)</text>`+"\n", lx+26, ly, xmlText(l.Name), xmlText(label), len(pn.Points[i]))
	}
	b.f("</g>\n")
}

// writeKey draws the footer, the time axis' name and the key to the
// markers, and closes the document.
func (t *trend) writeKey(b *svgBuf) {
	fy := svgTitleHeight + len(t.panels)*panelH + 8
	b.f(`<g class="key">` + "\n")
	lo, hi := timeRange(t.tlo, t.thi)
	writeTimeCaption(b, svgMarginLeft+t.plotW/2, float64(fy), lo, hi)
	ky, kx := fy+22, svgMarginLeft
	b.f(`<circle cx="%d" cy="%d" r="3.5" fill="#333"/><text x="%d" y="%d" dominant-baseline="middle">passed</text>`+"\n", kx+6, ky, kx+16, ky)
	kx += 80
	b.f(`<path d="M%d %dL%d %dM%d %dL%d %d" stroke="%s" stroke-width="2"/>`+"\n", kx+2, ky-4, kx+10, ky+4, kx+2, ky+4, kx+10, ky-4, failColour)
	b.f(`<text x="%d" y="%d" dominant-baseline="middle">not passed (▲▼ beyond the axis; on the bottom edge when not measured)</text>`+"\n", kx+16, ky)
	if t.o.Metric == MetricSamplesPerSec {
		kx, ky = svgMarginLeft, ky+20
		b.f(`<circle cx="%d" cy="%d" r="7" fill="none" stroke="%s" stroke-width="2"/>`+"\n", kx+6, ky, regressionColour)
		b.f(`<text x="%d" y="%d" dominant-baseline="middle">regression (the gate's rule): more than %s below, and outside %g·σ of, the median of the series' last %d earlier passed results</text>`+"\n",
			kx+18, ky, strconv.FormatFloat(t.rule.Threshold*100, 'f', -1, 64)+"%", t.rule.NoiseK, t.rule.Window)
	}
	b.f("</g>\n</svg>\n")
}
