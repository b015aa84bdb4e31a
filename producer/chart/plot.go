package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file is the one drawing of a plot that both pictures share: a
// frame with a time axis and a value axis fitted to the values, the
// gridlines and tick labels, and the markers of points. WriteTrendSVG
// stacks one plot per model; SeriesSVG draws one series in one plot.

// failColour marks a point that did not pass.
const failColour = "#d62728"

// svgBuf collects SVG markup.
type svgBuf struct{ bytes.Buffer }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(b, format, args...) }

// span is the range of the values added to it; empty until one is.
type span struct{ lo, hi float64 }

func emptySpan() span { return span{math.Inf(1), math.Inf(-1)} }

func (s *span) add(v float64) { s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v) }

func (s span) empty() bool { return math.IsInf(s.lo, 0) }

// plot is a frame at (x0, y0) of w × h pixels: x is run creation time over
// [tmin, tmax], y a figure over the first to the last of yTicks.
type plot struct {
	x0, y0, w, h float64
	tmin, tmax   time.Time
	xTicks       []time.Time
	xLayout      string
	yTicks       []float64
	yStep        float64
	// tickClass is the class of the tick labels, "tick" and "tick x" ("":
	// none); labelClass the axis label's.
	tickClass, labelClass string
}

// newPlot fits a plot at (x0, y0) of w × h to the times [tlo, thi]
// (timeRange) and to values: those of fit, else (nothing in it) those of
// fallback, else 0 to 1 (valueTicks).
func newPlot(x0, y0, w, h float64, tlo, thi time.Time, fit, fallback span) *plot {
	p := &plot{x0: x0, y0: y0, w: w, h: h}
	p.tmin, p.tmax = timeRange(tlo, thi)
	p.xTicks, p.xLayout = timeTicks(p.tmin, p.tmax, max(3, int(w)/110))
	if fit.empty() {
		fit = fallback
	}
	p.yTicks, p.yStep = valueTicks(fit)
	return p
}

// timeRange is the time axis over [lo, hi]: at least ten minutes around
// their middle, and a thirtieth wider on each side so that the first and
// last points stay off the frame.
func timeRange(lo, hi time.Time) (time.Time, time.Time) {
	if hi.Sub(lo) < 10*time.Minute {
		mid := lo.Add(hi.Sub(lo) / 2)
		lo, hi = mid.Add(-5*time.Minute), mid.Add(5*time.Minute)
	}
	pad := hi.Sub(lo) / 30
	return lo.Add(-pad), hi.Add(pad)
}

// valueTicks are the round ticks of a value axis fitted to s (0 to 1 when
// s is empty): a spread under 2% of the values is shown as ±2% around
// them, so that noise is not magnified, and a margin of 8% keeps the
// extreme points off the frame. An axis of values none of which is below
// 0 (every figure the pictures draw) never goes below 0.
func valueTicks(s span) ([]float64, float64) {
	lo, hi := s.lo, s.hi
	if s.empty() {
		lo, hi = 0, 1
	}
	floor := math.Inf(-1)
	if lo >= 0 {
		floor = 0
	}
	if spread := hi - lo; spread < 0.02*math.Abs(hi) {
		mid := (hi + lo) / 2
		lo, hi = mid-0.02*math.Abs(mid), mid+0.02*math.Abs(mid)
	}
	margin := 0.08 * (hi - lo)
	return niceTicks(math.Max(lo-margin, floor), hi+margin, 4)
}

// x is the horizontal position of time t.
func (p *plot) x(t time.Time) float64 {
	return p.x0 + p.w*float64(t.Sub(p.tmin))/float64(p.tmax.Sub(p.tmin))
}

// y is the vertical position of value v.
func (p *plot) y(v float64) float64 {
	lo, hi := p.yTicks[0], p.yTicks[len(p.yTicks)-1]
	return p.y0 + p.h*(1-(v-lo)/(hi-lo))
}

func (p *plot) bottom() float64 { return p.y0 + p.h }

// writeAxes draws the value gridlines and their labels, the time gridlines
// and theirs, the frame and the value axis' label.
func (p *plot) writeAxes(b *svgBuf, label string) {
	tick, tickX := attr("class", p.tickClass), ""
	if p.tickClass != "" {
		tickX = attr("class", p.tickClass+" x")
	}
	b.f(`<g class="y-axis" stroke="#e6e6e6">` + "\n")
	for _, v := range p.yTicks {
		y := p.y(v)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(p.x0), f1(y), f1(p.x0+p.w), f1(y))
		b.f(`<text%s x="%s" y="%s" text-anchor="end" dominant-baseline="middle" stroke="none" fill="#333">%s</text>`+"\n",
			tick, f1(p.x0-6), f1(y), xmlText(fmtTick(v, p.yStep)))
	}
	b.f("</g>\n")
	b.f(`<g class="x-axis" stroke="#e6e6e6">` + "\n")
	for _, t := range p.xTicks {
		x := p.x(t)
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(p.y0), f1(x), f1(p.bottom()))
		b.f(`<text%s x="%s" y="%s" text-anchor="middle" stroke="none" fill="#333">%s</text>`+"\n",
			tickX, f1(x), f1(p.bottom()+15), xmlText(t.UTC().Format(p.xLayout)))
	}
	b.f("</g>\n")
	b.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333"/>`+"\n", f1(p.x0), f1(p.y0), f1(p.w), num(p.h))
	mid := f1(p.y0 + p.h/2)
	b.f(`<text%s x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)" fill="#333">%s</text>`+"\n",
		attr("class", p.labelClass), mid, mid, xmlText(label))
}

// writeTimeCaption names the time axis over [lo, hi] at (x, y), with the
// day when it spans one.
func writeTimeCaption(b *svgBuf, x, y float64, lo, hi time.Time) {
	caption := "run created (UTC)"
	if sameDay(lo, hi) {
		caption = "run created (UTC, " + lo.UTC().Format("2006-01-02") + ")"
	}
	b.f(`<text x="%s" y="%s" text-anchor="middle" fill="#333">%s</text>`+"\n", f1(x), num(y), caption)
}

// marker is a point's shape at (x, y): its class, its further attributes
// (style, each with a leading space, values escaped) and its hover title
// (plain text; none when empty).
type marker struct {
	x, y  float64
	class string
	style string
	title string
}

// open writes the start tag of shape with the marker's class, geometry
// and style.
func (m marker) open(b *svgBuf, shape, geometry string) {
	b.f("<%s%s %s%s", shape, attr("class", m.class), geometry, m.style)
}

// close ends the element of shape with the marker's title.
func (m marker) close(b *svgBuf, shape string) {
	if m.title == "" {
		b.f("/>")
		return
	}
	b.f("><title>%s</title></%s>", xmlText(m.title), shape)
}

// dot draws a circle of radius r.
func (m marker) dot(b *svgBuf, r float64) {
	m.open(b, "circle", fmt.Sprintf(`cx="%s" cy="%s" r="%s"`, f1(m.x), f1(m.y), num(r)))
	m.close(b, "circle")
}

// cross draws an ✕ of half-width d.
func (m marker) cross(b *svgBuf, d float64) {
	x, y := m.x, m.y
	m.open(b, "path", fmt.Sprintf(`d="M%s %sL%s %sM%s %sL%s %s"`, f1(x-d), f1(y-d), f1(x+d), f1(y+d), f1(x-d), f1(y+d), f1(x+d), f1(y-d)))
	m.close(b, "path")
}

// diamond draws a ◇ of half-width d.
func (m marker) diamond(b *svgBuf, d float64) {
	x, y := m.x, m.y
	m.open(b, "path", fmt.Sprintf(`d="M%s %sL%s %sL%s %sL%s %sZ"`, f1(x), f1(y-d), f1(x+d), f1(y), f1(x), f1(y+d), f1(x-d), f1(y)))
	m.close(b, "path")
}

// edge draws a triangle pointing out of the frame across the edge at y:
// up when up, else down.
func (m marker) edge(b *svgBuf, up bool) {
	s := 1.0
	if !up {
		s = -1
	}
	x, y := m.x, m.y
	m.open(b, "path", fmt.Sprintf(`d="M%s %sL%s %sL%s %sZ"`, f1(x), f1(y-s), f1(x-5), f1(y+8*s), f1(x+5), f1(y+8*s)))
	m.close(b, "path")
}

// writeNotPassed draws a point that did not pass, m at its x: an ✕ of
// half-width d at its value v when it has one (ok) inside the axis, a
// triangle on the edge it is beyond, and an ✕ on the bottom edge when it
// has none. It never sets the axis. The class gets "failed" (and
// "off-scale" for a triangle); the ✕ is stroked, the triangle filled.
func (p *plot) writeNotPassed(b *svgBuf, m marker, v float64, ok bool, d float64) {
	lo, hi := p.yTicks[0], p.yTicks[len(p.yTicks)-1]
	cross, tri := m, m
	cross.class = joinClass(m.class, "failed")
	cross.style = fmt.Sprintf(` stroke="%s" stroke-width="2"`, failColour)
	tri.class = joinClass(m.class, "failed off-scale")
	tri.style = fmt.Sprintf(` fill="%s"`, failColour)
	switch {
	case !ok:
		cross.y = p.bottom()
		cross.cross(b, d)
	case v > hi:
		tri.y = p.y0
		tri.edge(b, true)
	case v < lo:
		tri.y = p.bottom()
		tri.edge(b, false)
	default:
		cross.y = p.y(v)
		cross.cross(b, d)
	}
}

// polyline draws a line through pts ("x,y") with attrs (each with a
// leading space) and a hover title (none when empty).
func polyline(b *svgBuf, attrs string, pts []string, title string) {
	b.f(`<polyline%s points="%s"`, attrs, strings.Join(pts, " "))
	marker{title: title}.close(b, "polyline")
}

// xy is a point of a polyline or polygon.
func xy(x, y float64) string { return f1(x) + "," + f1(y) }

// attr is the attribute ` name="value"`, value escaped, or nothing when
// value is empty.
func attr(name, value string) string {
	if value == "" {
		return ""
	}
	return " " + name + `="` + xmlText(value) + `"`
}

// joinClass joins the non-empty class names cs.
func joinClass(cs ...string) string {
	var out []string
	for _, c := range cs {
		if c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, " ")
}

// xmlText escapes s for XML text and attribute values.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num prints v with the digits it needs.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

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
