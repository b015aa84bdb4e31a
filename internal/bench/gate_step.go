package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
)

// After a step. A series whose throughput dropped (a regression landed
// and stayed) must still be judged right: a later commit at the new level
// caused nothing new and must pass, and a second drop below the new level
// must fail like the first one did. The experiment plants, in each series,
// a first step down of GateStepMin to GateStepMax (drawn) that persists:
// the history has History+GateAfterMax runs, the last 1 to GateAfterMax
// of them (drawn) at the new level. The history is produced as the gate
// produces it: each run judged when it ran against the history before it
// (Suspect), a suspect re-run Repeats times on other boards and entered
// as the lower median of its attempts (as the gate's onePerRun keeps a
// run). The candidate is at the new level (clean: a confirmed regression
// is a false positive) or, in a Planted fraction, a second step of Drop
// below it (detection), judged with confirmation as the first-step
// figures are. The same series are judged by the window baseline (the
// gate's rule before change points, windowRegression), its history
// produced by that rule.
const (
	GateStepMin  = 0.10
	GateStepMax  = 0.40
	GateAfterMax = 8
)

// Random streams of the after-a-step experiment, apart from the first
// step's (so its figures are today's) and from each other.
const (
	gateStepSalt       = 0x2545f4914f6cdd1d
	gateStepRepeatSalt = 0x9fb21c651e98df25
)

// gateRule is a regression rule as the bench uses it: suspect says an
// original attempt is worth confirming against the history, confirmed
// that the median of the attempts is a regression.
type gateRule struct {
	suspect   func(history []float64, runs []int, value float64) bool
	confirmed func(history []float64, runs []int, attempts []float64) bool
}

// changePointRule is the gate's own rule (gate.GateConfig.Suspect and
// JudgeAttempts, against the segment the run continues) with repeats.
func changePointRule(c gate.GateConfig, repeats int) gateRule {
	confirming := c
	confirming.Repeats = repeats
	return gateRule{
		suspect: func(h []float64, n []int, v float64) bool {
			g := c.SegmentRuns(h, n)
			return confirming.SuspectOn(v, &g)
		},
		confirmed: func(h []float64, n []int, a []float64) bool {
			g := c.SegmentRuns(h, n)
			return c.JudgeAttemptsOn(&g, a).Verdict == gate.VerdictRegression
		},
	}
}

// windowBaselineRule is the gate's rule before change points, kept as the
// bench's reference (windowRegression) with repeats.
func windowBaselineRule(c gate.GateConfig, repeats int) gateRule {
	return gateRule{
		suspect: func(h []float64, _ []int, v float64) bool { return windowRegression(c, h, v, 1+repeats) },
		confirmed: func(h []float64, _ []int, a []float64) bool {
			return windowRegression(c, h, runstate.Median(a), len(a))
		},
	}
}

// windowRegression is the window baseline: the gate's rule before it cut
// histories at change points. The baseline is the median of the last
// Window history values, σ 1.4826·MAD of them, and value (the median of n
// attempts; n = 1+Repeats for Suspect's screen of one attempt) is a
// regression when it is more than Threshold below the baseline and more
// than NoiseK·sqrt(π/2n)·σ below it (sqrt(π/2n) at most 1), with at least
// MinHistory history values.
func windowRegression(c gate.GateConfig, history []float64, value float64, n int) bool {
	if len(history) > c.Window {
		history = history[len(history)-c.Window:]
	}
	if len(history) < c.MinHistory || !(value > 0) {
		return false
	}
	base := runstate.Median(history)
	dev := make([]float64, len(history))
	for i, h := range history {
		dev[i] = math.Abs(h - base)
	}
	band := c.NoiseK * min(1, math.Sqrt(math.Pi/(2*float64(n)))) * 1.4826 * runstate.Median(dev)
	return base > 0 && (value-base)/base < -c.Threshold && base-value > band
}

// ruleCounts are one rule's figures with confirmation.
type ruleCounts struct {
	// FalsePositives counts the clean candidates failed, Detected the
	// planted steps caught, Suspects the candidates suspected.
	FalsePositives, Detected, Suspects int
}

// runSteps runs the after-a-step experiment over cfg.Series series into
// rep (cfg validated); it ends early with ctx's error.
func runSteps(ctx context.Context, cfg GateConfig, rep *GateReport) error {
	rng := rand.New(rand.NewPCG(cfg.Seed^gateStepSalt, cfg.Seed))
	rules := [2]gateRule{changePointRule(cfg.Gate, cfg.Repeats), windowBaselineRule(cfg.Gate, cfg.Repeats)}
	counts := [2]*ruleCounts{&rep.Step, &rep.WindowStep}
	n := cfg.History + GateAfterMax
	orig := make([]float64, n+1)
	boards := make([]int, n+1)
	levels := make([]float64, n+1)
	hist := make([]float64, n)
	runs := make([]int, n) // attempts behind each history value
	for i := range cfg.Series {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		s := newGateSeries(rng)
		step := GateStepMin + (GateStepMax-GateStepMin)*rng.Float64()
		after := 1 + rng.IntN(GateAfterMax)
		second := rng.Float64() < cfg.Planted
		// Every run's original attempt, the candidate's last: drawn once,
		// judged by both rules.
		for k := range orig {
			levels[k] = 1.0
			if k >= n-after {
				levels[k] = 1 - step
			}
			if k == n && second {
				levels[k] *= 1 - cfg.Drop
			}
			boards[k] = rng.IntN(GateBoards)
			orig[k] = s.attempt(rng, boards[k], levels[k])
		}
		if second {
			rep.SecondSteps++
		} else {
			rep.AtNewLevel++
		}
		rep.RunsAfter += after
		for r, rule := range rules {
			for k := range n {
				hist[k], runs[k] = orig[k], 1
				if rule.suspect(hist[:k], runs[:k], orig[k]) {
					hist[k], runs[k] = lowerMedian(s.repeats(cfg, i, k, boards[k], levels[k], orig[k])), 1+cfg.Repeats
				}
			}
			if !rule.suspect(hist, runs, orig[n]) {
				continue
			}
			counts[r].Suspects++
			if rule.confirmed(hist, runs, s.repeats(cfg, i, n, boards[n], levels[n], orig[n])) {
				counts[r].Detected += b2i(second)
				counts[r].FalsePositives += b2i(!second)
			}
		}
	}
	return nil
}

// repeats is run k of series i confirmed: its original attempt and
// cfg.Repeats repeats on other boards at level, drawn from a stream of
// (series, run) alone, so both rules and every history draw the same.
func (s *gateSeries) repeats(cfg GateConfig, i, k, board int, level, original float64) []float64 {
	rr := rand.New(rand.NewPCG(cfg.Seed^gateStepRepeatSalt, uint64(i)<<16|uint64(k)))
	a := []float64{original}
	for range cfg.Repeats {
		a = append(a, s.attempt(rr, (board+1+rr.IntN(GateBoards-1))%GateBoards, level))
	}
	return a
}

// lowerMedian is the median of a, the lower one of an even count: the
// value the gate keeps of a run with repeats.
func lowerMedian(a []float64) float64 {
	a = slices.Clone(a)
	slices.Sort(a)
	return a[(len(a)-1)/2]
}
