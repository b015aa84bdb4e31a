package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// The gate bench measures the regression gate's quality on synthetic
// series judged by the gate's own code (gate.GateConfig.Judge and
// JudgeAttempts): how often it fails a series that did not change (false
// positives) and how often it catches a planted drop (detection), with
// and without confirmation repeats.
//
// The noise model, per series: a base throughput (log-uniform, 50 to 5000
// samples/sec) on a pool of GateBoards boards, each board a small fixed
// offset (±GateBoardSpread) from the base; every attempt jitters by a
// normal factor whose σ is the series' own (uniform in [GateJitterMin,
// GateJitterMax]); with probability GateOutlierP an attempt is an outlier,
// GateOutlierMin to GateOutlierMax slower (a noisy neighbour, a throttled
// board); and board 0 of every pool is bimodal: with probability
// GateBimodalP an attempt on it runs in its slow mode, GateBimodalDrop
// slower. The history and the candidate run on boards drawn at random;
// the confirmation repeats, as the gate queues them, avoid the candidate's
// board and draw from the same series (with the planted drop when there
// is one).
const (
	GateBoards      = 4
	GateBoardSpread = 0.005
	GateJitterMin   = 0.005
	GateJitterMax   = 0.025
	GateOutlierP    = 0.02
	GateOutlierMin  = 0.10
	GateOutlierMax  = 0.40
	GateBimodalP    = 0.3
	GateBimodalDrop = 0.08
)

// GateConfig configures `benchfleet bench gate`. DefaultGateConfig gives
// the defaults; a zero Series, Planted, Drop or Repeats is out of range
// (Validate says so, naming the flag), not a default.
type GateConfig struct {
	// Series is how many synthetic series to judge (--series; default 1000).
	Series int
	// Planted is the fraction of series with a planted drop (--planted;
	// default 0.5).
	Planted float64
	// Drop is the planted drop, e.g. 0.10 = 10% slower (--drop; default
	// 0.10).
	Drop float64
	// History is how many baseline results each series has (0: the gate's
	// window).
	History int
	// Repeats is how many confirmation repeats a suspect gets (--confirm;
	// default gate.DefaultRepeats). At least 1: the bench compares the
	// gate with and without confirmation.
	Repeats int
	// Seed seeds the noise; the same seed gives the same report, and the
	// same series whatever Repeats is (the repeats draw from a stream of
	// their own). Every value, 0 included, is a seed.
	Seed uint64
	// Gate tunes the gate (zero: its defaults; its Repeats is not used).
	Gate gate.GateConfig
}

// DefaultGateConfig is the bench's defaults: 1000 series, half with a
// planted 10% drop, gate.DefaultRepeats repeats, seed 1.
func DefaultGateConfig() GateConfig {
	return GateConfig{Series: 1000, Planted: 0.5, Drop: 0.10, Repeats: gate.DefaultRepeats, Seed: 1}
}

// Validate fills the gate's defaults and History, and names the first
// value out of range by its flag (a *ConfigError).
func (c *GateConfig) Validate() error {
	g, err := c.Gate.WithDefaults()
	if err != nil {
		return configErr("bench gate: %v", err)
	}
	c.Gate = g
	if c.History == 0 {
		c.History = g.Window
	}
	switch {
	case c.Series < 2 || c.Series > 10_000_000:
		return configErr("bench gate: --series %d: must be between 2 and 10000000", c.Series)
	case !(c.Planted > 0 && c.Planted < 1):
		return configErr("bench gate: --planted %v: must be above 0 and below 1", c.Planted)
	case !(c.Drop > 0 && c.Drop < 1):
		return configErr("bench gate: --drop %v: must be above 0 and below 1 (0.10 = 10%% slower)", c.Drop)
	case c.History < 1 || c.History > 1000:
		return configErr("bench gate: History %d: must be between 1 and 1000", c.History)
	case c.Repeats < 1 || c.Repeats > protocol.MaxRepeat:
		return configErr("bench gate: --confirm %d: must be between 1 and %d (the bench compares the gate with and without confirmation)", c.Repeats, protocol.MaxRepeat)
	}
	return nil
}

// GateReport is what the gate bench found.
type GateReport struct {
	Config GateConfig
	// Clean and Planted count the series without and with a planted drop.
	Clean, Planted int
	// FalsePositives and Detected count, without confirmation, the clean
	// series judged a regression and the planted ones caught.
	FalsePositives, Detected int
	// Suspects counts the series the gate suspects with Repeats to
	// confirm them (GateConfig.Suspect); RepeatsRun the repeats they took.
	Suspects, RepeatsRun int
	// Confirmed: the same counts when only a regression the median of the
	// attempts confirms fails.
	ConfirmedFalsePositives, ConfirmedDetected int
	// Window: the confirmed figures of the window baseline (the gate's
	// rule before change points, windowRegression) on the same series
	// and repeats.
	Window ruleCounts
	// After a step (gate_step.go): AtNewLevel and SecondSteps count the
	// series whose candidate is at the new level and a second step below
	// it, RunsAfter the history runs after the first steps; Step the gate's
	// figures with confirmation, WindowStep the window baseline's.
	AtNewLevel, SecondSteps, RunsAfter int
	Step, WindowStep                   ruleCounts
}

// FalsePositiveRate, DetectionRate and their confirmed twins are the
// counts as fractions of the clean and planted series.
func (r *GateReport) FalsePositiveRate() float64 { return frac(r.FalsePositives, r.Clean) }
func (r *GateReport) DetectionRate() float64     { return frac(r.Detected, r.Planted) }
func (r *GateReport) ConfirmedFalsePositiveRate() float64 {
	return frac(r.ConfirmedFalsePositives, r.Clean)
}
func (r *GateReport) ConfirmedDetectionRate() float64 { return frac(r.ConfirmedDetected, r.Planted) }

// StepRates are a rule's false positive and detection rates after a step.
func (r *GateReport) StepRates(c ruleCounts) (fp, detection float64) {
	return frac(c.FalsePositives, r.AtNewLevel), frac(c.Detected, r.SecondSteps)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func frac(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// gateRepeatSalt sets the repeats' random stream apart from the series'.
const gateRepeatSalt = 0x5851f42d4c957f2d

// RunGate judges cfg.Series synthetic series; it ends early with ctx's
// error. The series (history, candidate, planted or not) draw from one
// stream of cfg.Seed, the confirmation repeats of series i from their own
// (cfg.Seed, i): the series, and so the figures without confirmation, are
// the same for every cfg.Repeats, and a series' first repeats too.
func RunGate(ctx context.Context, cfg GateConfig) (*GateReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	rep := &GateReport{Config: cfg}
	hist := make([]float64, cfg.History)
	confirming := cfg.Gate
	confirming.Repeats = cfg.Repeats
	for i := range cfg.Series {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s := newGateSeries(rng)
		planted := rng.Float64() < cfg.Planted
		for k := range hist {
			hist[k] = s.attempt(rng, rng.IntN(GateBoards), 1)
		}
		level := 1.0
		if planted {
			level, rep.Planted = 1-cfg.Drop, rep.Planted+1
		} else {
			rep.Clean++
		}
		board := rng.IntN(GateBoards)
		attempts := []float64{s.attempt(rng, board, level)}
		// The repeats, drawn when a rule suspects the candidate: the same
		// for the gate and the window baseline.
		repeats := func() []float64 {
			if len(attempts) == 1 {
				rr := rand.New(rand.NewPCG(cfg.Seed^gateRepeatSalt, uint64(i)))
				for range cfg.Repeats {
					other := (board + 1 + rr.IntN(GateBoards-1)) % GateBoards // Job.Avoid
					attempts = append(attempts, s.attempt(rr, other, level))
				}
			}
			return attempts
		}
		alone := cfg.Gate.Judge(true, attempts[0], hist).Verdict == gate.VerdictRegression
		suspect := confirming.Suspect(attempts[0], hist)
		confirmed := false
		if suspect {
			rep.Suspects++
			rep.RepeatsRun += cfg.Repeats
			confirmed = cfg.Gate.JudgeAttempts(hist, repeats()).Verdict == gate.VerdictRegression
		}
		window := false
		if windowRegression(cfg.Gate, hist, attempts[0], 1+cfg.Repeats) {
			rep.Window.Suspects++
			a := repeats()
			window = windowRegression(cfg.Gate, hist, runstate.Median(a), len(a))
		}
		switch {
		case planted:
			rep.Detected += b2i(alone)
			rep.ConfirmedDetected += b2i(confirmed)
			rep.Window.Detected += b2i(window)
		default:
			rep.FalsePositives += b2i(alone)
			rep.ConfirmedFalsePositives += b2i(confirmed)
			rep.Window.FalsePositives += b2i(window)
		}
	}
	if err := runSteps(ctx, cfg, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// gateSeries is one synthetic series: its base, jitter and board offsets.
type gateSeries struct {
	base, jitter float64
	offset       [GateBoards]float64
}

func newGateSeries(rng *rand.Rand) *gateSeries {
	s := &gateSeries{base: 50 * math.Pow(100, rng.Float64()), jitter: GateJitterMin + (GateJitterMax-GateJitterMin)*rng.Float64()}
	for b := range s.offset {
		s.offset[b] = GateBoardSpread * (2*rng.Float64() - 1)
	}
	return s
}

// attempt draws one samples/sec of the series on board b at level (1, or
// 1 - the planted drop).
func (s *gateSeries) attempt(rng *rand.Rand, b int, level float64) float64 {
	v := s.base * level * (1 + s.offset[b]) * (1 + s.jitter*rng.NormFloat64())
	if b == 0 && rng.Float64() < GateBimodalP {
		v *= 1 - GateBimodalDrop
	}
	if rng.Float64() < GateOutlierP {
		v *= 1 - (GateOutlierMin + (GateOutlierMax-GateOutlierMin)*rng.Float64())
	}
	return max(v, s.base*1e-3)
}

// Summary is the report's last line, for scripts: "false positives <f>%
// detection <d>% (confirmed: false positives <f2>% detection <d2>%)".
func (r *GateReport) Summary() string {
	return fmt.Sprintf("false positives %.1f%% detection %.1f%% (confirmed: false positives %.1f%% detection %.1f%%)",
		100*r.FalsePositiveRate(), 100*r.DetectionRate(), 100*r.ConfirmedFalsePositiveRate(), 100*r.ConfirmedDetectionRate())
}

// StepSummary is the after-a-step line, for scripts: "after a step: false
// positives <f>% detection of a second step <d>% (window baseline: false
// positives <f0>% detection <d0>%)".
func (r *GateReport) StepSummary() string {
	f, d := r.StepRates(r.Step)
	f0, d0 := r.StepRates(r.WindowStep)
	return fmt.Sprintf("after a step: false positives %.1f%% detection of a second step %.1f%% (window baseline: false positives %.1f%% detection %.1f%%)",
		100*f, 100*d, 100*f0, 100*d0)
}

// Print writes the figures, ending with StepSummary and Summary.
func (r *GateReport) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "series %d (%d clean, %d with a planted %.0f%% drop), %d baseline results each, seed %d\n",
		c.Series, r.Clean, r.Planted, 100*c.Drop, c.History, c.Seed)
	fmt.Fprintf(w, "noise: jitter σ %.1f–%.1f%%, %.0f%% outliers %.0f–%.0f%% slower, board 0 of %d bimodal (%.0f%% of its attempts %.0f%% slower)\n",
		100*GateJitterMin, 100*GateJitterMax, 100*GateOutlierP, 100*GateOutlierMin, 100*GateOutlierMax, GateBoards,
		100*GateBimodalP, 100*GateBimodalDrop)
	fmt.Fprintf(w, "gate: %s\n", c.Gate)
	fmt.Fprintf(w, "without confirmation: %d false positives, %d of %d detected\n", r.FalsePositives, r.Detected, r.Planted)
	fmt.Fprintf(w, "with %d repeats: %d suspects, %d repeats run, %d false positives, %d of %d detected\n",
		c.Repeats, r.Suspects, r.RepeatsRun, r.ConfirmedFalsePositives, r.ConfirmedDetected, r.Planted)
	fmt.Fprintf(w, "window baseline with %d repeats: %d suspects, %d false positives, %d of %d detected\n",
		c.Repeats, r.Window.Suspects, r.Window.FalsePositives, r.Window.Detected, r.Planted)
	fmt.Fprintf(w, "after a step: %d series with a first step %.0f–%.0f%% down, %d–%d history runs before it and 1–%d after (%.1f on average); %d candidates at the new level, %d a second %.0f%% step below it\n",
		c.Series, 100*GateStepMin, 100*GateStepMax, c.History, c.History+GateAfterMax-1, GateAfterMax, frac(r.RunsAfter, c.Series),
		r.AtNewLevel, r.SecondSteps, 100*c.Drop)
	for _, x := range []struct {
		name string
		n    ruleCounts
	}{{"gate (change points)", r.Step}, {"window baseline", r.WindowStep}} {
		fmt.Fprintf(w, "after a step, %s with %d repeats: %d suspects, %d false positives, %d of %d second steps detected\n",
			x.name, c.Repeats, x.n.Suspects, x.n.FalsePositives, x.n.Detected, r.SecondSteps)
	}
	fmt.Fprintln(w, r.StepSummary())
	fmt.Fprintln(w, r.Summary())
}
