package gate

import (
	"math"

	"github.com/benchfleet/benchfleet/producer/runstate"
)

// Change points. A series' history is not one level: a commit that lands
// a regression (or a speed-up) moves it, and a baseline made of a rolling
// window of the last runs would take the new level in bit by bit while its
// noise estimate (the spread of the window) widened across the step, so a
// second drop would hide inside the widened band. Instead the history is
// cut into segments at its change points, and a run is judged against the
// segment it continues: the median of that segment's last Window runs,
// with a noise band estimated within segments only.
//
// The cut is found by replaying the gate over the history, oldest first
// (Segment): a run the gate's rule calls a regression or an improvement
// against the current segment starts a new one (a step), unless the run
// after it comes straight back to the level before it, in which case the
// step was a blip (one outlier run) and is left out of every segment.
// A step up, and a step down of a run that had no confirmation repeats,
// is tentative for its first run (see place): the segment before it stays
// the one judged against until a second run continues it.
// A run's history value is the median of its attempts when it had
// confirmation repeats, so a confirmed step is a step and an unconfirmed
// one is usually not. The detector is measured by `benchfleet bench gate`
// (false positives and detection of a second step after a first one).

// Step says how a segment began.
type Step string

// Steps.
const (
	// StepNone: the series' first segment.
	StepNone Step = ""
	// StepDown: a run the rule calls a regression against the segment
	// before.
	StepDown Step = "down"
	// StepUp: a run the rule calls an improvement against the segment
	// before.
	StepUp Step = "up"
)

// SegmentHorizon is how many of a series' latest runs the gate cuts into
// segments: an open regression older than this is no longer listed.
const SegmentHorizon = 1000

// Segment is a stretch of a series' history at one level: the runs from
// one change point to the next.
type Segment struct {
	// Start and End index the history: the segment's runs are
	// history[Start:End] without the blips (Segmentation.Blips).
	Start, End int
	// Step is how the segment began.
	Step Step
	// Before is the level of the segment before it when it began (0 for
	// the first).
	Before float64
	values []float64
	// tentative: a step up, or a step down of one attempt, of one run not
	// yet continued by a second (place); runs are judged against the
	// segment before it meanwhile.
	tentative bool
}

// Len is how many runs the segment has (blips left out).
func (s *Segment) Len() int { return len(s.values) }

// Level is the segment's baseline: the median of its last window values.
func (s *Segment) Level(window int) float64 {
	v := s.values
	if len(v) > window {
		v = v[len(v)-window:]
	}
	return runstate.Median(v)
}

// Segmentation is a history cut at its change points.
type Segmentation struct {
	Segments []Segment
	// Blips index the runs that left the level for one run and came
	// straight back: in no segment.
	Blips []int
	// Points is how many runs of the history are in a segment.
	Points int
	window int
}

// Current is the segment the next run is judged against (nil for an empty
// history): the last one, or the one before it while the last is a
// tentative step (place).
func (g *Segmentation) Current() *Segment {
	n := len(g.Segments)
	switch {
	case n == 0:
		return nil
	case n > 1 && g.Segments[n-1].tentative:
		return &g.Segments[n-2]
	}
	return &g.Segments[n-1]
}

// last is the history's last segment (nil for an empty history).
func (g *Segmentation) last() *Segment {
	if len(g.Segments) == 0 {
		return nil
	}
	return &g.Segments[len(g.Segments)-1]
}

// Level is the current segment's level (0 for an empty history).
func (g *Segmentation) Level() float64 {
	if s := g.Current(); s != nil {
		return s.Level(g.window)
	}
	return 0
}

// SigmaRel is the history's noise as a fraction of the level:
// 1.4826·MAD of the latest window runs' deviations from the level of their
// own segment, each relative to it. Segments of one run tell nothing of
// the noise and are skipped; a step never widens it.
func (g *Segmentation) SigmaRel() float64 {
	var dev []float64
	for i := len(g.Segments) - 1; i >= 0 && len(dev) < g.window; i-- {
		s := &g.Segments[i]
		if s.Len() < 2 {
			continue
		}
		level := s.Level(g.window)
		if !(level > 0) {
			continue
		}
		for k := s.Len() - 1; k >= 0 && len(dev) < g.window; k-- {
			dev = append(dev, math.Abs(s.values[k]-level)/level)
		}
	}
	return madScale * runstate.Median(dev)
}

// Segment cuts history (one value per run, oldest first, each above 0) at
// its change points by replaying the gate's rule over it (see above). c
// must have its defaults filled. At most SegmentHorizon latest runs are
// used; indexes are into history as given.
func (c GateConfig) Segment(history []float64) Segmentation {
	return c.SegmentRuns(history, nil)
}

// SegmentRuns is Segment knowing how many passed attempts each run of the
// history had (attempts[i] for history[i]; nil: one each). A run with two
// or more (a suspect confirmed by its repeats, or jobs that differ only by
// labels) that steps down is the new level at once; a step down of one
// attempt waits for the next run to continue it, as a step up does (place).
func (c GateConfig) SegmentRuns(history []float64, attempts []int) Segmentation {
	off := max(0, len(history)-SegmentHorizon)
	g := Segmentation{window: c.Window}
	for i := off; i < len(history); i++ {
		n := 1
		if i < len(attempts) {
			n = attempts[i]
		}
		c.place(&g, i, history[i], n)
	}
	return g
}

// place adds run i of value v to g: to the last segment, as a new
// segment (a step), or, when the last segment is one run that v says was
// a blip, to the segment before it (or as a step from it) with that run
// left out.
//
// A step up is tentative for its first run: runs are judged against the
// segment before it until a second run continues it (then it is the
// level), and if the next run does not continue it, it was a blip. A fast
// run that is noise (the median of a confirmed step that came out low,
// then one ordinary run above it) would otherwise be the level the next
// run is judged against, and an ordinary run a false regression; an
// improvement loses nothing by waiting one run. A step up that comes back
// to the level of the segment before the last (a fix of a step down) is
// the level at once: an open regression is closed by the run that fixed
// it. (bench gate, seeds 1-3, 20,000 series: after a step, false
// positives 1.0-1.1% → 0.7-0.9%, detection of a second step 97.6-98.0% →
// 97.4-97.6%.)
//
// A step down of one attempt (a run that had no confirmation repeats: the
// gate was off, as for a nightly run, or --confirm 0) is tentative too: by
// its value it cannot be told from an outlier or a bimodal board's slow
// mode, which the next run would then be judged against, and a real drop
// hidden (bench gate, first step, 20,000 series: detection 89% → 96%). A
// step down its run's repeats confirmed (attempts ≥ 2) is the level at
// once: the next commit at that level passes.
func (c GateConfig) place(g *Segmentation, i int, v float64, attempts int) {
	g.Points++
	cur := g.last()
	switch {
	case cur == nil:
		g.Segments = append(g.Segments, Segment{Start: i, End: i + 1, values: []float64{v}})
		return
	case len(g.Segments) == 1 && cur.Len() < c.MinHistory:
		// Too little history to tell a step from noise: it is the level.
		cur.values, cur.End = append(cur.values, v), i+1
		return
	}
	step := c.stepOf(g, cur, v)
	if step == StepNone {
		cur.values, cur.End, cur.tentative = append(cur.values, v), i+1, false
		return
	}
	if cur.Len() == 1 && len(g.Segments) > 1 {
		prev := &g.Segments[len(g.Segments)-2]
		if back := c.stepOf(g, prev, v) == StepNone; back || cur.tentative {
			// One run away and straight back, or a tentative step that
			// v does not continue: a blip.
			g.Blips = append(g.Blips, cur.Start)
			g.Points--
			g.Segments = g.Segments[:len(g.Segments)-1]
			if back {
				prev.values, prev.End = append(prev.values, v), i+1
				return
			}
			cur, step = prev, c.stepOf(g, prev, v)
		}
	}
	seg := Segment{Start: i, End: i + 1, Step: step, Before: cur.Level(c.Window), values: []float64{v}}
	switch {
	case step == StepUp:
		fix := len(g.Segments) > 1 && c.stepOf(g, &g.Segments[len(g.Segments)-2], v) == StepNone
		seg.tentative = !fix
	case step == StepDown && attempts < 2:
		seg.tentative = true
	}
	g.Segments = append(g.Segments, seg)
}

// stepOf is the step v would be against segment s of g: StepDown where
// the rule calls v a regression, StepUp an improvement, else StepNone. The
// band is at least DefaultNoiseK·σ whatever NoiseK is: a gate tuned
// tight (k = 1) fails more runs, but its history's noise is still noise.
func (c GateConfig) stepOf(g *Segmentation, s *Segment, v float64) Step {
	level := s.Level(c.Window)
	band := max(c.NoiseK, DefaultNoiseK) * g.SigmaRel() * level
	switch ch := (v - level) / level; {
	case !(level > 0):
		return StepNone
	case ch < -c.Threshold && level-v > band:
		return StepDown
	case ch > c.Threshold && v-level > band:
		return StepUp
	}
	return StepNone
}
