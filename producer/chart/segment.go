package chart

import (
	"math"
	"sort"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// segment is a stretch of a series' baseline history at one level, as the
// gate cut it (gate.SeriesPoint.Step begins one; a Blip is in none).
type segment struct {
	// first and last index the segment's first and last point of pts
	// (runs between them that are not in the history are not its runs).
	first, last int
	// level is the segment's baseline: the median of its last Window
	// runs' values, as gate.Segment.Level.
	level float64
	// runs is how many runs the segment has.
	runs int
	step gate.Step
}

// historyValue is the value run p has in its series' baseline history,
// and whether it is in it: a run on the baseline branch with a passed
// result that may be in a baseline (gate.InBaseline) measured above 0; its
// value the lower median of those (the gate's).
func historyValue(p gate.SeriesPoint) (float64, bool) {
	if !p.OnBaseline {
		return 0, false
	}
	rs := p.Results
	if rs == nil {
		rs = []*protocol.Result{p.Result}
	}
	var vs []float64
	for _, r := range rs {
		v := r.Measurements.SamplesPerSec
		if r.Status == protocol.StatusPassed && v > 0 && !math.IsInf(v, 0) && gate.InBaseline(r) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	sort.Float64s(vs)
	return vs[(len(vs)-1)/2], true
}

// segmentsOf cuts pts (gate.SeriesPoints or gate.SeriesOpen: oldest first,
// Step and Blip set) into the segments of its baseline history, their
// levels over the last window runs of each.
func segmentsOf(pts []gate.SeriesPoint, window int) []segment {
	var segs []segment
	var vals [][]float64
	for i, p := range pts {
		v, ok := historyValue(p)
		if !ok || p.Blip {
			continue
		}
		if len(segs) == 0 || p.Step != gate.StepNone {
			segs = append(segs, segment{first: i, step: p.Step})
			vals = append(vals, nil)
		}
		k := len(segs) - 1
		segs[k].last = i
		segs[k].runs++
		vals[k] = append(vals[k], v)
	}
	for k := range segs {
		v := vals[k]
		if len(v) > window {
			v = v[len(v)-window:]
		}
		segs[k].level = runstate.Median(v)
	}
	return segs
}

// writeSegments draws the levels of segs over pts (at p's x and y) as one
// step line behind the points (broad and pale, else thin): each segment's
// level from its first run to the next segment's first run (the last to
// its last run), in colour, with a hover title per segment, and a dashed
// step between them.
func writeSegments(b *svgBuf, p *plot, pts []gate.SeriesPoint, segs []segment, colour string, broad bool) {
	if len(segs) == 0 {
		return
	}
	style := ` stroke-width="6" stroke-opacity="0.22"`
	if !broad {
		style = ` stroke-width="2" stroke-opacity="0.7"`
	}
	b.f(`<g class="segments">`)
	for k, s := range segs {
		x0 := p.x(pts[s.first].Result.RunCreatedAt)
		x1 := p.x(pts[s.last].Result.RunCreatedAt)
		if k+1 < len(segs) {
			x1 = p.x(pts[segs[k+1].first].Result.RunCreatedAt)
		}
		if x1-x0 < 8 {
			x0, x1 = x0-4, x0+4
		}
		y := p.y(s.level)
		b.f(`<line class="segment" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"%s stroke-linecap="round">`,
			f1(x0), f1(y), f1(x1), f1(y), colour, style)
		b.f(`<title>%s</title></line>`, xmlText(segmentTitle(pts, s)))
		if k+1 < len(segs) {
			b.f(`<line class="step" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="3 3" stroke-opacity="0.6"/>`,
				f1(x1), f1(y), f1(x1), f1(p.y(segs[k+1].level)), colour)
		}
	}
	b.f("</g>\n")
}

// segmentTitle is the hover text of segment s of pts.
func segmentTitle(pts []gate.SeriesPoint, s segment) string {
	r := pts[s.first].Result
	how := "the series' first level"
	switch s.step {
	case gate.StepDown:
		how = "began with a step down"
	case gate.StepUp:
		how = "began with a step up"
	}
	return "segment from commit " + runstate.ShortCommit(r.Source.Commit) + " (run " + r.Run + "): level " + runstate.FmtRate(s.level) +
		" samples/sec over " + runstate.Count(s.runs, "run") + "; " + how
}
