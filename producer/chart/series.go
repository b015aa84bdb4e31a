package chart

import (
	"cmp"
	"html/template"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// SeriesOptions configures SeriesSVG.
type SeriesOptions struct {
	// ID is the svg element's id ("": none).
	ID string
	// Branch is the gate's baseline branch, named by the line's hover text
	// (the line joins the points that are OnBaseline).
	Branch string
	// Title is a point's hover text (nil: none).
	Title func(gate.SeriesPoint) string
	// RunLink makes each point a link to its run: RunLink followed by the
	// run's id, path-escaped ("": the points are not links).
	RunLink string
	// Open are the series' open and accepted regressions (gate.SeriesOpen),
	// each marked at its first run.
	Open []gate.OpenRegression
}

// Geometry of a series chart, in pixels.
const (
	seriesWidth      = 960
	seriesHeight     = 340
	seriesTop        = 12
	seriesPlotHeight = 280
)

// SeriesSVG draws one series, pts (gate.SeriesPoints or gate.SeriesOpen:
// oldest first, judged by the gate), as an svg element to place in a
// page: the runs over run creation time, on the plot that WriteTrendSVG
// draws each of its panels with (axes fitted to the passed values, never
// to a point that did not pass, never below 0). A passed run on the
// baseline branch (OnBaseline) is a dot, joined to the others by the line
// (class "trend"); a passed run of another branch, or of the untrusted
// producer, is a diamond (class "branch") off the line; a blip (one run
// off the level and straight back, in no segment) a hollow dot (class
// "blip"). Each point's class names its verdict ("pt regression",
// larger); a run that did not pass is a cross (class "failed") at its
// value when it has one inside the axis, a triangle on the edge it is
// beyond, else on the bottom edge. Behind them: the gate's noise band
// around the level each run was judged against (class "band", a step per
// run, cut at the axis); the level of each segment of the history (class
// "segment"); and a line at the first run of each open regression of
// o.Open (class "open-since", "accepted-since" for an accepted one),
// named with its commit and change by a label beside it. Every
// point has its hover title and, with RunLink, links to its run (an a
// element, class "point"). All text is escaped: the result is safe to
// place in HTML as it is. No points: an empty result.
func SeriesSVG(pts []gate.SeriesPoint, o SeriesOptions) template.HTML {
	if len(pts) == 0 {
		return ""
	}
	p := seriesPlot(pts)
	var b svgBuf
	b.f(`<svg xmlns="http://www.w3.org/2000/svg"%s class="chart" viewBox="0 0 %d %d" role="img" aria-label="samples/s over time" font-family="sans-serif" font-size="12">`+"\n",
		attr("id", o.ID), seriesWidth, seriesHeight)
	p.writeAxes(&b, "samples/s")
	writeBaseline(&b, p, pts)
	writeSegments(&b, p, pts, segmentsOf(pts), "#1f4e79", false)
	var line []string
	var marks []box
	for _, pt := range pts {
		if v, ok := seriesValue(pt); ok {
			x, y := p.x(pt.Result.RunCreatedAt), p.y(v)
			marks = append(marks, box{x - 6, y - 6, x + 6, y + 6})
			if pt.OnBaseline {
				line = append(line, xy(x, y))
			}
		}
	}
	polyline(&b, ` class="trend" fill="none" stroke="#555" stroke-width="1"`, line, "passed results on "+o.Branch)
	b.f("\n")
	tags := writeOpenSince(&b, p, pts, o.Open)
	for _, pt := range pts {
		writeSeriesPoint(&b, p, pt, o)
	}
	placeTags(tags, box{p.x0, p.y0, p.x0 + p.w, p.bottom()}, marks, lineBoxes(line))
	writeTags(&b, tags)
	writeTimeCaption(&b, p.x0+p.w/2, p.bottom()+36, p.tmin, p.tmax)
	b.f("</svg>\n")
	return template.HTML(b.String()) // every text and attribute value in it escaped
}

// seriesValue is the samples/sec of run pt and whether it is drawn as
// passed: it passed, with a figure.
func seriesValue(pt gate.SeriesPoint) (float64, bool) {
	v, _ := pointValue(MetricSamplesPerSec, pt)
	return v, pt.Result.Status == protocol.StatusPassed && v > 0
}

// seriesPlot is the plot of pts: fitted to their passed values (else to
// the figures of those that did not pass) and to the gate's band around
// the level each was judged against as far as it lies within a quarter of
// the values' spread (at least 5% of the highest) of them: a band far
// wider than the series is drawn cut at the axis, not fitted.
func seriesPlot(pts []gate.SeriesPoint) *plot {
	fit, fallback := emptySpan(), emptySpan()
	tlo, thi := pts[0].Result.RunCreatedAt, pts[0].Result.RunCreatedAt
	for _, pt := range pts {
		if t := pt.Result.RunCreatedAt; t.Before(tlo) {
			tlo = t
		} else if t.After(thi) {
			thi = t
		}
		if v, ok := seriesValue(pt); ok {
			fit.add(v)
		} else if v, ok := plotValue(MetricSamplesPerSec, pt.Result); ok && v != 0 {
			fallback.add(v)
		}
	}
	if !fit.empty() {
		reach := math.Max(0.25*(fit.hi-fit.lo), 0.05*fit.hi)
		lo, hi := math.Max(0, fit.lo-reach), fit.hi+reach
		for _, pt := range pts {
			if j := pt.Judgement; j.HasBaseline {
				fit.add(math.Min(hi, math.Max(lo, j.Baseline-j.Band)))
				fit.add(math.Min(hi, math.Max(lo, j.Baseline+j.Band)))
			}
		}
	}
	w := float64(seriesWidth - svgMarginLeft - svgMarginRight)
	p := newPlot(svgMarginLeft, seriesTop, w, seriesPlotHeight, tlo, thi, fit, fallback)
	p.tickClass, p.labelClass = "tick", "axis"
	return p
}

// writeBaseline draws, for each run that has one, the gate's noise band
// around the level it was judged against, as steps: each run's from
// halfway after the run before it to halfway to the next, cut at the
// axis.
func writeBaseline(b *svgBuf, p *plot, pts []gate.SeriesPoint) {
	lo, hi := p.yTicks[0], p.yTicks[len(p.yTicks)-1]
	clamp := func(v float64) float64 { return p.y(math.Min(hi, math.Max(lo, v))) }
	var upper, lower []string
	flush := func() {
		if len(upper) == 0 {
			return
		}
		for i := len(lower) - 1; i >= 0; i-- {
			upper = append(upper, lower[i])
		}
		m := marker{class: "band", style: ` fill="#1f77b4" fill-opacity="0.12" stroke="none"`, title: "the gate's noise band around the level each run was judged against"}
		m.open(b, "polygon", `points="`+strings.Join(upper, " ")+`"`)
		m.close(b, "polygon")
		b.f("\n")
		upper, lower = nil, nil
	}
	for i, pt := range pts {
		j := pt.Judgement
		if !j.HasBaseline {
			flush()
			continue
		}
		x := p.x(pt.Result.RunCreatedAt)
		x0, x1 := math.Max(p.x0, x-6), math.Min(p.x0+p.w, x+6)
		if i > 0 {
			x0 = (p.x(pts[i-1].Result.RunCreatedAt) + x) / 2
		}
		if i+1 < len(pts) {
			x1 = (p.x(pts[i+1].Result.RunCreatedAt) + x) / 2
		}
		yu, yl := clamp(j.Baseline+j.Band), clamp(j.Baseline-j.Band)
		upper = append(upper, xy(x0, yu), xy(x1, yu))
		lower = append(lower, xy(x0, yl), xy(x1, yl))
	}
	flush()
}

// writeOpenSince draws a line at the first run of each open (or accepted)
// regression of open, and returns the tags that name them.
func writeOpenSince(b *svgBuf, p *plot, pts []gate.SeriesPoint, open []gate.OpenRegression) []tag {
	var tags []tag
	for _, o := range open {
		i := slices.IndexFunc(pts, func(pt gate.SeriesPoint) bool { return pt.OnBaseline && pt.Result.Run == o.SinceRun })
		if i < 0 {
			continue
		}
		v, ok := seriesValue(pts[i])
		if !ok {
			continue
		}
		x := p.x(pts[i].Result.RunCreatedAt)
		colour, class, word := regressionColour, "open-since", "open since "
		if !o.IsOpen() {
			colour, class, word = acceptedColour, "accepted-since", "accepted since "
		}
		b.f(`<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 3"><title>%s</title></line>`+"\n",
			class, f1(x), f1(p.y0), f1(x), f1(p.bottom()), colour, xmlText(o.Text()))
		tags = append(tags, tag{ax: x, ay: p.y(v), bold: true, colour: colour, class: class,
			text: word + runstate.ShortCommit(cmp.Or(o.Since, o.SinceRun)) + " " + runstate.FmtChange(&o.Change)})
	}
	return tags
}

// writeSeriesPoint draws run pt, a link to its run with RunLink: a dot on
// the baseline branch, a diamond off it (larger when a regression), and
// writeNotPassed's marker when it did not pass.
func writeSeriesPoint(b *svgBuf, p *plot, pt gate.SeriesPoint, o SeriesOptions) {
	r := pt.Result
	if o.RunLink != "" {
		b.f(`<a href="%s" class="point">`, xmlText(o.RunLink+url.PathEscape(r.Run)))
	} else {
		b.f(`<g class="point">`)
	}
	m := marker{x: p.x(r.RunCreatedAt), class: "pt"}
	if o.Title != nil {
		m.title = o.Title(pt)
	}
	switch {
	case !pt.OnBaseline:
		m.class = "pt branch"
	case pt.Blip:
		m.class = "pt blip"
	}
	verdict := pt.Judgement.Verdict
	dot, diamond := 3.0, 5.0
	if verdict == gate.VerdictRegression {
		dot, diamond = 6, 8
	}
	v, passed := seriesValue(pt)
	switch {
	case !passed:
		p.writeNotPassed(b, m, v, v != 0, 5)
	case pt.OnBaseline:
		m.y, m.class = p.y(v), joinClass(m.class, string(verdict))
		m.dot(b, dot)
	default:
		m.y, m.class = p.y(v), joinClass(m.class, string(verdict))
		m.diamond(b, diamond)
	}
	if o.RunLink != "" {
		b.f("</a>\n")
	} else {
		b.f("</g>\n")
	}
}
