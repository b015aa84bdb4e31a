package gate

import (
	"math"
	"sort"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// SeriesPoint is one run of a series with the gate's judgement of it. A
// run counts once, as in the gate's history: its results of the series (a
// job and its confirmation repeats, or jobs that differ only by labels)
// are one point, judged on the median of those that passed.
type SeriesPoint struct {
	// Result is the run's result the point stands for: the one of the
	// median samples/sec of its passed results (the lower one of an even
	// count, the one the gate's history takes), else its first.
	Result *protocol.Result
	// Results are the run's results of the series, oldest first (nil: Result
	// alone).
	Results []*protocol.Result
	// Median is the median samples/sec of the run's passed results when it
	// has more than one result: the value Judgement is of. 0: Result's.
	Median float64
	// Judgement applies the gate's rule to the run (JudgeAttempts of its
	// passed results) against the series' earlier runs on the baseline
	// branch (the last Window of them, one point each), as the gate would
	// have judged it. A run's own results are never its baseline.
	Judgement Judgement
	// OnBaseline says the run is on the gate's baseline branch and may be
	// in its history (never a run of the untrusted producer).
	OnBaseline bool
	// Step says the run, in the history, began a segment (a change point:
	// StepDown or StepUp; StepNone otherwise); Blip says it left the level
	// for one run and is in no segment.
	Step Step
	Blip bool
	// Segment numbers the segment of the history the run is in, from 1
	// (0: not in the history: off the baseline, unmeasured, or a blip);
	// Level is that segment's level once the whole series is cut (the
	// median of its last Window runs).
	Segment int
	Level   float64
}

// Value is the samples/sec the point's judgement is of: the median of the
// run's passed results (Median), else Result's.
func (p SeriesPoint) Value() float64 {
	if p.Median > 0 {
		return p.Median
	}
	return p.Result.Measurements.SamplesPerSec
}

// Attempts is how many results of the series the run has.
func (p SeriesPoint) Attempts() int {
	return max(1, len(p.Results))
}

// SeriesPoints returns the runs of rs that have results of series s, oldest
// first, one point each, judged by gate (defaults filled by the caller)
// against the earlier runs on its baseline branch.
func SeriesPoints(rs []*protocol.Result, s Series, gate GateConfig) []SeriesPoint {
	pts, _ := SeriesOpen(rs, s, gate, nil)
	return pts
}

// InBaseline reports whether r may be a point of a baseline's history
// (on the baseline branch aside): its check strict enough (BaselinePCC)
// and of a trusted producer (never protocol.Result.Untrusted).
func InBaseline(r *protocol.Result) bool {
	return BaselinePCC(r) && !r.Untrusted()
}

// JudgeSeries folds rs, the results of one series oldest first, into one
// point per run (in the order of each run's first result) and judges each
// against the earlier points that baseline accepts (nil: every point), as
// the gate does: a run on the median of its passed results (JudgeAttempts),
// the history one value per run (the lower median of its passed results
// that may be in a baseline, InBaseline), the run's own results never in
// it. A run of the untrusted producer is judged but is never OnBaseline.
func JudgeSeries(rs []*protocol.Result, gate GateConfig, baseline func(*protocol.Result) bool) []SeriesPoint {
	pts, _, _ := judgeSeries(rs, gate, baseline)
	return pts
}

// SeriesOpen is SeriesPoints with the series' open (and accepted)
// regressions as its history on the baseline branch shows them after its
// last run (GateConfig.OpenRegressions).
func SeriesOpen(rs []*protocol.Result, s Series, gate GateConfig, as []Acceptance) ([]SeriesPoint, []OpenRegression) {
	var mine []*protocol.Result
	for _, r := range rs {
		if SeriesOf(r) == s {
			mine = append(mine, r)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return ResultBefore(mine[i], mine[j]) })
	pts, hist, cut := judgeSeries(mine, gate, func(r *protocol.Result) bool { return r.Source.Branch == gate.BaselineBranch })
	return pts, gate.OpenRegressions(s, hist, &cut, as)
}

// judgeSeries is JudgeSeries, also giving the history (one result per
// run on the baseline) and its cut: the history is cut as it grows, so
// each run is judged against the segments of the runs before it.
func judgeSeries(rs []*protocol.Result, gate GateConfig, baseline func(*protocol.Result) bool) ([]SeriesPoint, []*protocol.Result, Segmentation) {
	order, byRun := groupByRun(rs)
	out := make([]SeriesPoint, 0, len(order))
	var hist []*protocol.Result
	var at []int // the point of each history run
	cut := Segmentation{window: gate.Window}
	for _, run := range order {
		results := byRun[run]
		var passed, measured, trusted []*protocol.Result
		var vals []float64
		for _, r := range results {
			if r.Status != protocol.StatusPassed {
				continue
			}
			passed = append(passed, r)
			if v := r.Measurements.SamplesPerSec; v > 0 && !math.IsInf(v, 0) {
				vals = append(vals, v)
				measured = append(measured, r)
				if InBaseline(r) {
					trusted = append(trusted, r)
				}
			}
		}
		p := SeriesPoint{Result: results[0]}
		if len(results) > 1 {
			p.Results = results
		}
		if len(passed) > 0 {
			p.Result = passed[0]
			if len(measured) > 0 {
				p.Result = lowerMedian(measured)
			}
			p.Judgement = gate.JudgeAttemptsOn(&cut, vals)
			if len(results) > 1 && len(vals) > 0 {
				p.Median = runstate.Median(vals)
			}
		} else {
			p.Judgement = gate.JudgeOn(false, p.Result.Measurements.SamplesPerSec, &cut)
		}
		p.OnBaseline = (baseline == nil || baseline(p.Result)) && !p.Result.Untrusted()
		if p.OnBaseline && len(trusted) > 0 {
			h := lowerMedian(trusted)
			gate.place(&cut, len(hist), h.Measurements.SamplesPerSec, len(trusted))
			hist = append(hist, h)
			at = append(at, len(out))
		}
		out = append(out, p)
	}
	blip := map[int]bool{}
	for _, i := range cut.Blips {
		out[at[i]].Blip, blip[i] = true, true
	}
	for k, s := range cut.Segments {
		level := s.Level(gate.Window)
		for i := s.Start; i < s.End; i++ {
			if !blip[i] {
				out[at[i]].Segment, out[at[i]].Level = k+1, level
			}
		}
		if k > 0 {
			out[at[s.Start]].Step = s.Step
		}
	}
	return out, hist, cut
}

// lowerMedian is the result of rs with the median samples/sec (the lower
// one of an even count), as onePerRun picks a run's point of history.
func lowerMedian(rs []*protocol.Result) *protocol.Result {
	s := append([]*protocol.Result(nil), rs...)
	sort.SliceStable(s, func(a, b int) bool { return s[a].Measurements.SamplesPerSec < s[b].Measurements.SamplesPerSec })
	return s[(len(s)-1)/2]
}

// ResultBefore orders results by run creation, then run, then job: the
// order of a series over time.
func ResultBefore(a, b *protocol.Result) bool {
	switch {
	case !a.RunCreatedAt.Equal(b.RunCreatedAt):
		return a.RunCreatedAt.Before(b.RunCreatedAt)
	case a.Run != b.Run:
		return a.Run < b.Run
	default:
		return a.Job < b.Job
	}
}

// SegmentNote says in a few words where the run stands in the cut history
// (a blip, or the first run of a step), for a point's hover text; "" for
// any other run.
func (p SeriesPoint) SegmentNote() string {
	switch {
	case p.Blip:
		return "blip: off the level for one run and straight back, in no segment"
	case p.Step == StepDown:
		return "began a segment: a step down"
	case p.Step == StepUp:
		return "began a segment: a step up"
	}
	return ""
}
