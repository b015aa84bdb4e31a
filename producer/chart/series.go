package chart

import (
	"html/template"
	"net/url"
	"strings"

	"github.com/benchfleet/benchfleet/producer/gate"
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
}

// Geometry of a series chart, in pixels.
const (
	seriesWidth      = 960
	seriesHeight     = 340
	seriesTop        = 12
	seriesPlotHeight = 280
)

// SeriesSVG draws one series, pts (gate.SeriesPoints: oldest first,
// judged by the gate), as an svg element to place in a page: the runs
// over run creation time, on the plot that WriteTrendSVG draws each of
// its panels with (axes fitted to the passed values and to the gate's
// noise band, never to a point that did not pass). A passed run on the
// baseline branch (OnBaseline) is a dot, joined to the others by the line
// (class "trend"); a passed run of another branch, or of the untrusted
// producer, is a diamond (class "branch") off the line. Each point's class
// names its verdict ("pt regression", larger); a run that did not pass is
// a cross (class "failed") at its value when it has one inside the axis,
// a triangle on the edge it is beyond, else on the bottom edge. Behind
// them: the gate's rolling baseline (dashed) and its noise band (class
// "band"). Every point has its hover title and, with RunLink, links to its
// run (an a element, class "point"). All text is escaped: the result is
// safe to place in HTML as it is. No points: an empty result.
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
	var line []string
	for _, pt := range pts {
		if v, ok := seriesValue(pt); ok && pt.OnBaseline {
			line = append(line, xy(p.x(pt.Result.RunCreatedAt), p.y(v)))
		}
	}
	polyline(&b, ` class="trend" fill="none" stroke="#555" stroke-width="1"`, line, "passed results on "+o.Branch)
	b.f("\n")
	for _, pt := range pts {
		writeSeriesPoint(&b, p, pt, o)
	}
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

// seriesPlot is the plot of pts: fitted to their passed values and the
// gate's band around each one's baseline, else to the figures of those
// that did not pass.
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
		if j := pt.Judgement; j.HasBaseline {
			fit.add(j.Baseline - j.Band)
			fit.add(j.Baseline + j.Band)
		}
	}
	w := float64(seriesWidth - svgMarginLeft - svgMarginRight)
	p := newPlot(svgMarginLeft, seriesTop, w, seriesPlotHeight, tlo, thi, fit, fallback)
	p.tickClass, p.labelClass = "tick", "axis"
	return p
}

// writeBaseline draws the gate's noise band around the baseline of each
// point that has one, and the baseline as a dashed line.
func writeBaseline(b *svgBuf, p *plot, pts []gate.SeriesPoint) {
	var upper, lower, base []string
	for _, pt := range pts {
		j := pt.Judgement
		if !j.HasBaseline {
			continue
		}
		x := p.x(pt.Result.RunCreatedAt)
		upper = append(upper, xy(x, p.y(j.Baseline+j.Band)))
		lower = append(lower, xy(x, p.y(j.Baseline-j.Band)))
		base = append(base, xy(x, p.y(j.Baseline)))
	}
	if len(base) == 0 {
		return
	}
	for i := len(lower) - 1; i >= 0; i-- {
		upper = append(upper, lower[i])
	}
	m := marker{class: "band", style: ` fill="#1f77b4" fill-opacity="0.12" stroke="none"`, title: "the gate's noise band around the baseline"}
	m.open(b, "polygon", `points="`+strings.Join(upper, " ")+`"`)
	m.close(b, "polygon")
	b.f("\n")
	polyline(b, ` class="baseline" fill="none" stroke="#1f77b4" stroke-opacity="0.5" stroke-dasharray="4 3"`, base, "")
	b.f("\n")
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
	if !pt.OnBaseline {
		m.class = "pt branch"
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
