package chart

import (
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
)

// segment is a stretch of a series' baseline history at one level, as the
// gate cut it (gate.SeriesPoint.Segment and Level; a Blip is in none).
type segment struct {
	// first and last index the segment's first and last point of pts
	// (runs between them that are not in the history are not its runs).
	first, last int
	// level is the segment's baseline (gate.SeriesPoint.Level).
	level float64
	// runs is how many runs the segment has.
	runs int
	step gate.Step
}

// segmentsOf gathers pts (gate.SeriesPoints or gate.SeriesOpen: oldest
// first) into the segments the gate cut their baseline history into.
func segmentsOf(pts []gate.SeriesPoint) []segment {
	var segs []segment
	for i, p := range pts {
		if p.Segment == 0 {
			continue
		}
		if len(segs) == 0 || p.Segment != pts[segs[len(segs)-1].first].Segment {
			segs = append(segs, segment{first: i, level: p.Level, step: p.Step})
		}
		k := len(segs) - 1
		segs[k].last = i
		segs[k].runs++
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
