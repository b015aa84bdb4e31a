package chart

import (
	"cmp"
	"fmt"
	"io"
	"math"
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
	// improvement) against the segment of its series' history on the
	// baseline branch that it continues, as `results gate` does; zero
	// fields take the gate's defaults. Only samples/sec is judged.
	Gate gate.GateConfig
	// Acceptances are the acceptance records (gate.ReadAcceptances): an
	// accepted step down is marked accepted, not open (nil: none).
	Acceptances []gate.Acceptance
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
	svgLegendLine   = 16
	svgKeyLine      = 18
	svgMinWidth     = 480
	svgDefaultWidth = 960
)

// trendPalette colours the series of a panel in turn; after a full cycle the
// lines are dashed so that they stay distinguishable.
var trendPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79"}

// Marker colours of the gate's verdicts and of accepted regressions.
const (
	regressionColour = "#d62728"
	improvedColour   = "#2ca02c"
	acceptedColour   = "#666666"
)

// trendPanel is the series of one model: they share a y axis.
type trendPanel struct {
	Title string
	Lines []TrendLine
	// Points[i] are the runs of Lines[i], one point each, judged by the
	// gate's rule (judgeLine); Open[i] its open and accepted regressions,
	// Segs[i] the segments of its history.
	Points [][]gate.SeriesPoint
	Open   [][]gate.OpenRegression
	Segs   [][]segment
	// top is the panel's top edge, legend its legend laid out under the
	// plot (legendH high).
	top     float64
	legend  []flowItem
	legendH float64
}

// trendPanels groups lines by model (TrendLines order), judging every
// run with the gate's rule against the segment of its series' history
// that it continues.
func trendPanels(lines []TrendLine, rule gate.GateConfig, as []gate.Acceptance) []trendPanel {
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
		pts, open := judgeLine(l, rule, as)
		panels[i].Lines = append(panels[i].Lines, l)
		panels[i].Points = append(panels[i].Points, pts)
		panels[i].Open = append(panels[i].Open, open)
		panels[i].Segs = append(panels[i].Segs, segmentsOf(pts))
	}
	return panels
}

// judgeLine folds a series' results into one point per run (a job and its
// confirmation repeats are one point, at the median of its passed
// results) and judges each as the gate does (gate.SeriesOpen): against
// the segment of the series' history on the baseline branch it
// continues; it gives the series' open and accepted regressions too. A
// series with no run on the baseline branch (a query of another branch)
// is judged against its own earlier runs, and has no open regression.
func judgeLine(l TrendLine, rule gate.GateConfig, as []gate.Acceptance) ([]gate.SeriesPoint, []gate.OpenRegression) {
	pts, open := gate.SeriesOpen(l.Results, l.Series, rule, as)
	for _, p := range pts {
		if p.OnBaseline {
			return pts, open
		}
	}
	return gate.JudgeSeries(l.Results, rule, nil), nil
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
			return runstate.Median(vs), true
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
	plotW    float64
	// keyTop is the footer's top edge, key its entries laid out (keyH
	// high).
	keyTop float64
	key    []flowItem
	keyH   float64
}

// WriteTrendSVG draws rs as a self-contained SVG document: one panel per
// model, stacked, sharing the time axis; in each panel one line per
// series (TrendLines) through the metric of its passed runs on the gate's
// baseline branch over run creation time, each such run a dot, and the
// runs of other branches (a pull request's, a bisect's, the untrusted
// producer's) unjoined hollow diamonds. A run is one point: its results
// of the series, a job and its confirmation repeats, at their median.
// The y axis of a panel is fitted to its passed results (not from 0, never
// below it), so a 10% step shows as one. A result that did not pass is a
// red cross at its value when that lies inside the axis, else at the edge
// it is beyond (drawn as a triangle), and on the bottom edge when it has
// no value: it never sets the range. For samples/sec, the level of each
// segment of the series' history (the gate's baseline, cut where the
// series changed level) is a dashed step line, a blip (one run off the
// level and straight back) a hollow circle, a point the gate's rule
// judges a regression is ringed in red with its change (an improvement in
// green), and the first run of an open regression says so with its
// commit (an accepted one says accepted). No two of these texts overlap.
// Each panel's legend, under its plot, names its series in full. Axes
// carry labelled ticks (UTC dates or times, values). All text is
// XML-escaped. Times are shown in UTC. rs must not be empty.
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
	t := &trend{o: o, rule: rule, panels: trendPanels(TrendLines(rs), rule, o.Acceptances),
		tlo: rs[0].RunCreatedAt, thi: rs[0].RunCreatedAt}
	// The time axis is shared: every result.
	for _, r := range rs {
		if r.RunCreatedAt.Before(t.tlo) {
			t.tlo = r.RunCreatedAt
		}
		if r.RunCreatedAt.After(t.thi) {
			t.thi = r.RunCreatedAt
		}
	}
	t.plotW = float64(o.Width - svgMarginLeft - svgMarginRight)
	t.layout()
	return t, nil
}

// layout places the panels one under the other, each with its legend
// laid out under its plot, then the footer's key.
func (t *trend) layout() {
	top := float64(svgTitleHeight)
	for i := range t.panels {
		pn := &t.panels[i]
		pn.top = top
		var items []flowItem
		for li, l := range pn.Lines {
			colour, dash := lineStyle(li)
			label := strings.TrimPrefix(l.Name, pn.Title+"/") + " (" + runstate.Count(len(pn.Points[li]), "run") + ")"
			items = append(items, flowItem{text: label, title: l.Name, colour: colour, dash: dash, symbol: symbolLine})
		}
		legendTop := top + svgPanelTitle + svgPanelHeight + svgPanelAxis
		pn.legendH = flow(items, svgMarginLeft, legendTop, t.plotW, svgLegendLine)
		pn.legend = items
		top = legendTop + pn.legendH + svgPanelGap
	}
	t.keyTop = top
	t.key = t.keyItems()
	t.keyH = flow(t.key, svgMarginLeft, top+26, t.plotW, svgKeyLine)
}

func (t *trend) height() int { return int(math.Ceil(t.keyTop + 26 + t.keyH + 8)) }

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
	return newPlot(svgMarginLeft, t.panels[i].top+svgPanelTitle, t.plotW, svgPanelHeight, t.tlo, t.thi, passed, other)
}

// writePanel draws panel i: its title, axes, segments, series, the tags
// of its regressions and its legend.
func (t *trend) writePanel(b *svgBuf, i int) {
	pn, p := t.panels[i], t.plotOf(i)
	b.f(`<g class="panel" data-panel="%s">`+"\n", xmlText(pn.Title))
	b.f(`<text x="%s" y="%s" font-size="13" font-weight="bold">%s</text>`+"\n", f1(p.x0), f1(p.y0-svgPanelTitle+15), xmlText(pn.Title))
	p.writeAxes(b, t.o.Metric.Label())
	if t.o.Metric == MetricSamplesPerSec {
		for li := range pn.Lines {
			colour, _ := lineStyle(li)
			writeSegments(b, p, pn.Points[li], pn.Segs[li], colour, true)
		}
	}
	var tags []tag
	var marks, lines []box
	for li, l := range pn.Lines {
		tags = append(tags, t.writeLine(b, p, l, pn.Points[li], pn.Open[li], li, &marks, &lines)...)
	}
	placeTags(tags, box{p.x0, p.y0 - svgPanelTitle + 18, p.x0 + p.w, p.bottom()}, marks, lines)
	b.f(`<g class="tags">` + "\n")
	writeTags(b, tags)
	b.f("</g>\n")
	b.f(`<g class="legend">` + "\n")
	writeFlow(b, pn.legend)
	b.f("</g>\n</g>\n")
}

// lineStyle is the colour and dash attribute of a panel's i-th line.
func lineStyle(i int) (string, string) {
	if i >= len(trendPalette) {
		return trendPalette[i%len(trendPalette)], ` stroke-dasharray="6 3"`
	}
	return trendPalette[i], ""
}

// writeLine draws series l of a panel, its i-th: the line through its
// passed runs on the baseline branch and a marker per run (each marker's
// box added to marks, the line's to lines), and returns the tags of its
// regressions.
func (t *trend) writeLine(b *svgBuf, p *plot, l TrendLine, pts []gate.SeriesPoint, open []gate.OpenRegression, i int, marks, lines *[]box) []tag {
	colour, dash := lineStyle(i)
	b.f(`<g class="series" data-series="%s">`+"\n", xmlText(l.Name))
	var line []string
	for _, pt := range pts {
		if pt.Result.Status == protocol.StatusPassed && pt.OnBaseline {
			v, _ := pointValue(t.o.Metric, pt)
			line = append(line, xy(p.x(pt.Result.RunCreatedAt), p.y(v)))
		}
	}
	polyline(b, fmt.Sprintf(` class="line" fill="none" stroke="%s" stroke-width="2"%s`, colour, dash), line, "")
	*lines = append(*lines, lineBoxes(line)...)
	b.f("\n")
	var tags []tag
	for _, pt := range pts {
		if tg, ok := t.writePoint(b, p, l, pt, open, colour, marks); ok {
			tags = append(tags, tg)
		}
	}
	b.f("</g>\n")
	return tags
}

// writePoint draws run pt of series l: a dot when it passed on the
// baseline branch, a hollow diamond off it, a hollow circle for a blip,
// ringed when the gate's rule flags it or it began an open (or accepted)
// regression, else writeNotPassed's marker. It returns the point's tag
// (its change, and the open regression it began), if it has one.
func (t *trend) writePoint(b *svgBuf, p *plot, l TrendLine, pt gate.SeriesPoint, open []gate.OpenRegression, colour string, marks *[]box) (tag, bool) {
	r := pt.Result
	v, ok := pointValue(t.o.Metric, pt)
	m := marker{x: p.x(r.RunCreatedAt), title: t.tip(l, pt, v, ok, open)}
	if r.Status != protocol.StatusPassed {
		p.writeNotPassed(b, m, v, ok, 4)
		b.f("\n")
		return tag{}, false
	}
	m.y = p.y(v)
	*marks = append(*marks, box{m.x - 4, m.y - 4, m.x + 4, m.y + 4})
	switch {
	case !pt.OnBaseline:
		m.class, m.style = "off", fmt.Sprintf(` fill="#ffffff" stroke="%s" stroke-width="1.5"`, colour)
		m.diamond(b, 5)
	case pt.Blip:
		m.class, m.style = "blip", fmt.Sprintf(` fill="#ffffff" stroke="%s" stroke-width="1.5"`, colour)
		m.dot(b, 3.5)
	default:
		m.style = fmt.Sprintf(` fill="%s"`, colour)
		m.dot(b, 3.5)
	}
	b.f("\n")
	if t.o.Metric != MetricSamplesPerSec {
		return tag{}, false
	}
	j := pt.Judgement
	tg := tag{ax: m.x, ay: m.y, bold: true}
	switch j.Verdict {
	case gate.VerdictRegression:
		tg.text, tg.colour, tg.class = runstate.FmtChange(&j.Change), regressionColour, "change regression"
	case gate.VerdictImproved:
		tg.text, tg.colour, tg.class = runstate.FmtChange(&j.Change), improvedColour, "change improved"
	}
	for _, o := range open {
		if o.SinceRun != r.Run || !pt.OnBaseline {
			continue
		}
		word, c, cls := "open since "+runstate.ShortCommit(cmp.Or(o.Since, o.SinceRun)), regressionColour, "open"
		if !o.IsOpen() {
			word, c, cls = "accepted "+runstate.ShortCommit(cmp.Or(o.Since, o.SinceRun)), acceptedColour, "accepted"
		}
		if tg.text == "" {
			tg.text = runstate.FmtChange(&o.Change)
		}
		tg.text += " · " + word
		tg.colour, tg.class = c, cls
	}
	if tg.text == "" {
		return tag{}, false
	}
	cls := "regression"
	if j.Verdict == gate.VerdictImproved {
		cls = "improved"
	}
	b.f(`<g class="%s">`, cls)
	ring := m
	ring.class, ring.title = "ring", ""
	ring.style = fmt.Sprintf(` fill="none" stroke="%s" stroke-width="2"`, tg.colour)
	ring.dot(b, 8)
	b.f("</g>\n")
	*marks = append(*marks, box{m.x - 9, m.y - 9, m.x + 9, m.y + 9})
	return tg, true
}

// tip is the hover text of run pt of series l, its figure v (ok: it has
// one), with the open regressions of the series it began.
func (t *trend) tip(l TrendLine, pt gate.SeriesPoint, v float64, ok bool, open []gate.OpenRegression) string {
	r, j := pt.Result, pt.Judgement
	figure := "not measured"
	if ok && v != 0 {
		figure = strconv.FormatFloat(v, 'g', 6, 64)
	}
	if n := pt.Attempts(); n > 1 && r.Status == protocol.StatusPassed {
		figure += fmt.Sprintf(", median of %d attempts", n)
	}
	branch := r.Source.Branch
	if branch == "" {
		branch = "no branch"
	}
	tip := fmt.Sprintf("%s\nrun %s, job %s\n%s UTC\ncommit %s on %s\n%s: %s (%s)", l.Name, r.Run, r.Job,
		r.RunCreatedAt.UTC().Format("2006-01-02 15:04"), runstate.ShortCommit(r.Source.Commit), branch, t.o.Metric.Label(), figure, r.Status)
	if j.HasBaseline && r.Status == protocol.StatusPassed {
		tip += fmt.Sprintf("\n%s: %s vs the level %s of its segment (%d runs)", j.Verdict, runstate.FmtChange(&j.Change), runstate.FmtRate(j.Baseline), j.N)
	}
	switch {
	case !pt.OnBaseline:
		tip += "\noff " + t.rule.BaselineBranch + ": not joined, never in its baseline"
	case pt.SegmentNote() != "":
		tip += "\n" + pt.SegmentNote()
	}
	for _, o := range open {
		if o.SinceRun == r.Run && pt.OnBaseline {
			tip += "\n" + o.Text()
		}
	}
	return tip
}

// keyItems are the entries of the footer's key: of the markers the
// panels have, and the rule's.
func (t *trend) keyItems() []flowItem {
	var off, notPassed, blip, open bool
	for _, pn := range t.panels {
		for li, pts := range pn.Points {
			for _, pt := range pts {
				passed := pt.Result.Status == protocol.StatusPassed
				off = off || (passed && !pt.OnBaseline)
				notPassed = notPassed || !passed
				blip = blip || (passed && pt.Blip)
			}
			open = open || len(pn.Open[li]) > 0
		}
	}
	br := t.rule.BaselineBranch
	items := []flowItem{{symbol: symbolDot, colour: "#333", text: "passed on " + br + " (joined by the line)"}}
	if off {
		items = append(items, flowItem{symbol: symbolDiamond, colour: "#333", text: "passed off " + br + ": another branch, a bisect, the untrusted producer (not joined)"})
	}
	if notPassed {
		items = append(items, flowItem{symbol: symbolCross, colour: failColour, text: "not passed (▲▼ beyond the axis; on the bottom edge when not measured)"})
	}
	if t.o.Metric != MetricSamplesPerSec {
		return items
	}
	if blip {
		items = append(items, flowItem{symbol: symbolBlip, colour: "#333", text: "blip: one run off the level and straight back, in no segment"})
	}
	items = append(items,
		flowItem{symbol: symbolSegment, colour: "#333", text: "level of each segment: the series' history on " + br + " cut where it changed level (the gate's baseline)"},
		flowItem{symbol: symbolRing, colour: regressionColour, text: fmt.Sprintf("regression (the gate's rule): more than %s below, and outside %g·σ of, the level of the segment it continues (the median of its last %d runs)",
			strconv.FormatFloat(t.rule.Threshold*100, 'f', -1, 64)+"%", t.rule.NoiseK, t.rule.Window)})
	if open {
		items = append(items, flowItem{symbol: symbolRing, colour: regressionColour,
			text: "open since C: the first run of a step down the series has not come back from and nobody accepted (accepted C: accepted)"})
	}
	return items
}

// writeKey draws the footer, the time axis' name and the key to the
// markers, and closes the document.
func (t *trend) writeKey(b *svgBuf) {
	b.f(`<g class="key">` + "\n")
	lo, hi := timeRange(t.tlo, t.thi)
	writeTimeCaption(b, svgMarginLeft+t.plotW/2, t.keyTop+8, lo, hi)
	writeFlow(b, t.key)
	b.f("</g>\n</svg>\n")
}
