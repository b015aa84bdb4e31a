package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// Verdict is the regression gate's judgement of one job.
type Verdict string

// The gate's verdicts, as `results gate --format json` prints them.
const (
	// VerdictOK: within the threshold or the noise band of the baseline.
	VerdictOK Verdict = "ok"
	// VerdictRegression: slower than the baseline by more than both the
	// threshold and the noise band. Trips the gate (exit 2).
	VerdictRegression Verdict = "regression"
	// VerdictImproved: faster than the baseline by more than both.
	VerdictImproved Verdict = "improved"
	// VerdictInsufficientHistory: fewer passed results in the series than
	// the gate's MinHistory; reported, never a failure.
	VerdictInsufficientHistory Verdict = "insufficient-history"
	// VerdictFailed: the job ended without passing (PCC below the minimum,
	// harness failure, infrastructure error, its own timeout). Always a
	// failure (exit 1), whatever the figures.
	VerdictFailed Verdict = "failed"
	// VerdictUnfinished: the job has not ended (no result, no dead
	// letter): it never started or is still running when the waiting
	// ended. Never passed; a waiter that timed out exits 3, not 1.
	VerdictUnfinished Verdict = "unfinished"
	// VerdictNotReproduced: the job alone was a regression, but the median
	// of its attempts (the job and its confirmation repeats) is not.
	// Reported with every attempt, never a failure.
	VerdictNotReproduced Verdict = "not-reproduced"
)

// Gate defaults.
const (
	DefaultBaselineBranch = "main"
	DefaultWindow         = 10
	DefaultThreshold      = 0.05
	DefaultNoiseK         = 3
	DefaultMinHistory     = 5
	// madScale turns a median absolute deviation into a standard deviation
	// estimate for normally distributed samples.
	madScale = 1.4826
)

// GateConfig configures the regression gate.
type GateConfig struct {
	// BaselineBranch is the branch whose results form the history
	// (default "main").
	BaselineBranch string
	// Window is how many of the series' latest passed results form the
	// baseline (default 10).
	Window int
	// Threshold is the relative drop in samples/sec that counts as a
	// regression when it is also outside the noise band, e.g. 0.05 = 5%
	// (default 0.05; must be in (0, 1)).
	Threshold float64
	// NoiseK scales the noise band: k·σ with σ = 1.4826·MAD of the
	// baseline results (default 3).
	NoiseK float64
	// MinHistory is the fewest baseline results needed for a verdict other
	// than insufficient-history (default 5; at most Window).
	MinHistory int
	// Repeats is how many confirmation repeats a front end that can
	// re-queue (submit --gate) gives a suspected regression before it
	// fails (0: none, the suspect fails at once; at most
	// protocol.MaxRepeat). Judging folds in whatever repeats a run has,
	// whatever Repeats says.
	Repeats int
}

// WithDefaults returns c with every zero field set to its default, and an
// error naming the first field out of range.
func (c GateConfig) WithDefaults() (GateConfig, error) {
	if c.BaselineBranch == "" {
		c.BaselineBranch = DefaultBaselineBranch
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.NoiseK == 0 {
		c.NoiseK = DefaultNoiseK
	}
	if c.MinHistory == 0 {
		c.MinHistory = min(DefaultMinHistory, c.Window)
	}
	switch {
	case c.Window < 1 || c.Window > 1000:
		return c, fmt.Errorf("gate: Window %d: must be between 1 and 1000", c.Window)
	case !(c.Threshold > 0 && c.Threshold < 1):
		return c, fmt.Errorf("gate: Threshold %v: must be above 0 and below 1 (0.05 = 5%%)", c.Threshold)
	case !(c.NoiseK >= 0) || math.IsInf(c.NoiseK, 0):
		return c, fmt.Errorf("gate: NoiseK %v: must be a non-negative number", c.NoiseK)
	case c.MinHistory < 1 || c.MinHistory > c.Window:
		return c, fmt.Errorf("gate: MinHistory %d: must be between 1 and Window (%d)", c.MinHistory, c.Window)
	case c.Repeats < 0 || c.Repeats > protocol.MaxRepeat:
		return c, fmt.Errorf("gate: Repeats %d: must be between 0 and %d", c.Repeats, protocol.MaxRepeat)
	case strings.ContainsAny(c.BaselineBranch, "\x00\n\r"):
		return c, fmt.Errorf("gate: BaselineBranch %q: must not contain control characters", c.BaselineBranch)
	}
	return c, nil
}

// String describes the configuration for reports, e.g. "baseline main:
// median of the last 10 passed results, threshold 5%, noise band 3σ, at
// least 5 results".
func (c GateConfig) String() string {
	s := fmt.Sprintf("baseline %s: median of the last %d passed runs since the series' last change point, threshold %s, noise band %sσ (MAD within segments), at least %d results",
		c.BaselineBranch, c.Window, FmtPercent(c.Threshold), strconv.FormatFloat(c.NoiseK, 'g', -1, 64), c.MinHistory)
	if c.Repeats > 0 {
		s += fmt.Sprintf(", a suspected regression confirmed by %d repeats", c.Repeats)
	}
	return s
}

// GateOptions are the gate's tuning as a person writes it, e.g. on the
// command line: Threshold as "5%" or "0.05", every field required (the
// command line's defaults are the Default constants; Repeats 0 is none).
type GateOptions struct {
	BaselineBranch string
	Window         int
	Threshold      string
	MinHistory     int
	NoiseK         float64
	Repeats        int
}

// Config validates o and gives the gate's configuration. An error starts
// with the option it is about as the command line names it ("threshold",
// "window", "min-history", "noise-k", "confirm", "baseline-branch").
func (o GateOptions) Config() (GateConfig, error) {
	th, err := ParseThreshold(o.Threshold)
	if err != nil {
		return GateConfig{}, fmt.Errorf("threshold: %w", err)
	}
	switch {
	case o.BaselineBranch == "":
		return GateConfig{}, errors.New("baseline-branch: must not be empty")
	case strings.ContainsAny(o.BaselineBranch, "\x00\n\r"):
		return GateConfig{}, fmt.Errorf("baseline-branch %q: must not contain control characters", o.BaselineBranch)
	case o.Window < 1 || o.Window > 1000:
		return GateConfig{}, fmt.Errorf("window %d: must be between 1 and 1000", o.Window)
	case o.MinHistory < 1 || o.MinHistory > o.Window:
		return GateConfig{}, fmt.Errorf("min-history %d: must be between 1 and the window (%d)", o.MinHistory, o.Window)
	case o.Repeats < 0 || o.Repeats > protocol.MaxRepeat:
		return GateConfig{}, fmt.Errorf("confirm %d: must be between 0 and %d", o.Repeats, protocol.MaxRepeat)
	case !(o.NoiseK > 0) || o.NoiseK > 100:
		return GateConfig{}, fmt.Errorf("noise-k %v: must be above 0 and at most 100 (a small value like 0.01 leaves the threshold alone to decide)", o.NoiseK)
	}
	c := GateConfig{BaselineBranch: o.BaselineBranch, Window: o.Window, Threshold: th, NoiseK: o.NoiseK, MinHistory: o.MinHistory, Repeats: o.Repeats}
	return c.WithDefaults()
}

// ParseThreshold reads a threshold written as a percentage ("5%", "2.5%")
// or a fraction ("0.05"). It must come out above 0 and below 1.
func ParseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a percentage like 5%% or a fraction like 0.05", s)
	}
	if pct {
		v /= 100
	}
	if v <= 0 || v >= 1 {
		if !pct && v >= 1 && v < 100 {
			return 0, fmt.Errorf("%q: a fraction must be below 1; write %s%% for a percentage", s, t)
		}
		return 0, fmt.Errorf("%q: must be above 0%% and below 100%%", s)
	}
	return v, nil
}

// FmtPercent renders a fraction as a percentage without trailing zeros
// (0.05 → "5%", 0.025 → "2.5%").
func FmtPercent(f float64) string {
	return strconv.FormatFloat(math.Round(f*100*1e6)/1e6, 'f', -1, 64) + "%"
}

// Series identifies the results that are comparable with each other: the
// same benchmark (test and model), batch size, data format, pool and runner.
type Series struct {
	Test       string `json:"test,omitempty"`
	Model      string `json:"model"`
	BatchSize  int    `json:"batch_size"`
	DataFormat string `json:"data_format"`
	Pool       string `json:"pool"`
	Runner     string `json:"runner"`
}

// SeriesOf is the series of a result.
func SeriesOf(r *protocol.Result) Series { return SeriesFor(r.Benchmark, r.Pool, r.Runner) }

// SeriesFor is the series of a benchmark on pool and runner: of a result
// (SeriesOf) or of a job not run yet (submit.SeriesOfJob).
func SeriesFor(b protocol.Benchmark, pool, runner string) Series {
	return Series{Test: b.Test, Model: b.Model, BatchSize: b.BatchSize, DataFormat: b.DataFormat, Pool: pool, Runner: runner}
}

// Name is the short display name of a series, e.g. "resnet50/n150/bs8/bfloat16".
func (s Series) Name() string {
	return fmt.Sprintf("%s/%s/bs%d/%s", s.Model, s.Pool, s.BatchSize, s.DataFormat)
}

// HistoryFunc reads the results matching a filter (the CLI passes its
// results query, which may use the Parquet index).
type HistoryFunc func(ctx context.Context, f index.Filter) ([]*protocol.Result, error)

// Judgement is the gate's assessment of one value against its history.
type Judgement struct {
	Verdict Verdict
	// N is the number of baseline results used: the latest runs (at most
	// Window) of the segment judged against.
	N int
	// Points is how many runs of the history are in a segment (blips
	// left out); MinHistory counts these.
	Points int
	// Baseline is the level of the segment judged against, the median of
	// its last N runs; HasBaseline is false when there were none (then
	// Baseline and Change are 0).
	Baseline    float64
	HasBaseline bool
	// Change is (value - baseline) / baseline: -0.10 = 10% slower.
	Change float64
	// Sigma is the noise within segments (Segmentation.SigmaRel) at the
	// baseline's level; Band is NoiseK·Sigma, in samples/sec.
	Sigma, Band float64
	// SegmentStart indexes the history's first run of the segment judged
	// against; Step says how that segment began (StepNone: the series'
	// first).
	SegmentStart int
	Step         Step
}

// Judge assesses value (samples/sec of a job; passed says whether the job
// passed) against history, the samples/sec of the series' baseline runs,
// oldest first, one value each. The history is cut at its change points
// (Segment) and value is judged against the segment it continues, the
// last one: its level is the median of its last Window runs, the noise
// band NoiseK times the noise within segments. c must have its defaults
// filled (WithDefaults).
//
// A drop counts as a regression only when it is beyond BOTH the threshold
// and the noise band; a rise beyond both is an improvement. A failed job is
// failed whatever its figures; with fewer than MinHistory runs in the
// history the verdict is insufficient-history.
func (c GateConfig) Judge(passed bool, value float64, history []float64) Judgement {
	g := c.Segment(history)
	return c.JudgeOn(passed, value, &g)
}

// JudgeOn is Judge against a history already cut (c.Segment): a front
// end judging many values against one series cuts it once.
func (c GateConfig) JudgeOn(passed bool, value float64, g *Segmentation) Judgement {
	j := Judgement{Points: g.Points}
	if s := g.Current(); s != nil {
		j.N = min(s.Len(), c.Window)
		j.Baseline = s.Level(c.Window)
		j.SegmentStart, j.Step = s.Start, s.Step
		j.Sigma = g.SigmaRel() * j.Baseline
		j.Band = c.NoiseK * j.Sigma
		if j.Baseline > 0 {
			j.HasBaseline = true
			j.Change = (value - j.Baseline) / j.Baseline
		}
	}
	switch {
	case !passed:
		j.Verdict = VerdictFailed
	case !(value > 0) || !j.HasBaseline || j.Points < c.MinHistory:
		j.Verdict = VerdictInsufficientHistory
	case j.Change < -c.Threshold && j.Baseline-value > j.Band:
		j.Verdict = VerdictRegression
	case j.Change > c.Threshold && value-j.Baseline > j.Band:
		j.Verdict = VerdictImproved
	default:
		j.Verdict = VerdictOK
	}
	if !(value > 0) {
		j.Change = 0
	}
	return j
}

// onePerRun keeps one result per run of hist (sorted oldest first), at
// the place of the run's first: the one of the run's median samples/sec
// (the lower one of an even count). A run's confirmation repeats, and jobs
// that differ only by labels, are one point of history, not several;
// attempts counts the results each point stands for.
func onePerRun(hist []*protocol.Result) (runs []*protocol.Result, attempts []int) {
	order, byRun := groupByRun(hist)
	runs, attempts = make([]*protocol.Result, 0, len(order)), make([]int, 0, len(order))
	for _, run := range order {
		runs = append(runs, lowerMedian(byRun[run]))
		attempts = append(attempts, len(byRun[run]))
	}
	return runs, attempts
}

// groupByRun groups rs by run, the runs in the order they first appear.
func groupByRun(rs []*protocol.Result) (order []string, byRun map[string][]*protocol.Result) {
	byRun = map[string][]*protocol.Result{}
	for _, r := range rs {
		if _, ok := byRun[r.Run]; !ok {
			order = append(order, r.Run)
		}
		byRun[r.Run] = append(byRun[r.Run], r)
	}
	return order, byRun
}

// GateRow is the gate's verdict on one job of a run. Its JSON form is the
// `results gate --format json` contract (the verdicts above): baseline and change
// are null when the series has no baseline results.
type GateRow struct {
	Job        string   `json:"job"`
	Model      string   `json:"model"`
	Pool       string   `json:"pool"`
	BatchSize  int      `json:"batch_size"`
	DataFormat string   `json:"data_format"`
	Baseline   *float64 `json:"baseline"`
	Value      float64  `json:"value"`
	Change     *float64 `json:"change"`
	Verdict    Verdict  `json:"verdict"`
	// Trust is "untrusted" for a job of the untrusted producer (its
	// result's protocol.Result.Untrusted): judged against trusted
	// baselines, never in one. Absent: trusted.
	Trust protocol.Trust `json:"trust,omitempty"`

	// Series is the job's series; History, Sigma and Band come from the
	// judgement; Reason says why a failed job failed. Not part of the JSON
	// contract.
	Series  Series  `json:"-"`
	History int     `json:"-"`
	Points  int     `json:"-"`
	Sigma   float64 `json:"-"`
	Band    float64 `json:"-"`
	Reason  string  `json:"-"`

	// Confirmation lists the attempts of a job that has confirmation
	// repeats (absent otherwise); Value, Change and Verdict are then the
	// median's.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// Suspect says the job passed, has no repeats, and is worth
	// confirming (GateConfig.Suspect). Not part of the JSON contract.
	Suspect bool `json:"-"`
	// OpenRegressions are the series' steps down that are still open or
	// were accepted, as its history before this run shows them (absent:
	// none). A job judged ok at the lower level has them listed here.
	OpenRegressions []OpenRegression `json:"open_regressions,omitempty"`
}

// Gate compares the results of a run with the history of their series on
// a baseline branch.
type Gate struct {
	cfg      GateConfig
	history  HistoryFunc
	accepted []Acceptance
}

// SetAccepted gives the gate the acceptance records (ReadAcceptances): an
// accepted step is listed as accepted, not open.
func (g *Gate) SetAccepted(as []Acceptance) { g.accepted = as }

// NewGate fills cfg's defaults and validates it (the error names the
// field). history reads the baseline results; nil means there is no
// history, so every passed job is insufficient-history.
func NewGate(cfg GateConfig, history HistoryFunc) (*Gate, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Gate{cfg: c, history: history}, nil
}

// Config is the gate's configuration with its defaults filled.
func (g *Gate) Config() GateConfig { return g.cfg }

// Evaluate judges every row of run m (in the rows' order). The history of
// a series is its trusted passed results on the baseline branch with
// samples/sec above 0, from runs other than m created no later than m,
// newest last.
// History is read once per model and pool.
func (g *Gate) Evaluate(ctx context.Context, m *protocol.RunManifest, rows []runstate.Row) ([]GateRow, error) {
	tests := map[string]string{}
	for _, j := range m.Jobs {
		tests[j.ID] = j.Test
	}
	cache := map[[2]string]map[Series]*historyRuns{}
	out := make([]GateRow, 0, len(rows))
	for _, r := range rows {
		s := Series{Test: tests[r.Job], Model: r.Model, BatchSize: r.BatchSize, DataFormat: r.DataFormat, Pool: r.Pool, Runner: r.Runner}
		if r.Result != nil {
			s = SeriesOf(r.Result)
		}
		key := [2]string{s.Model, s.Pool}
		bySeries, ok := cache[key]
		if !ok {
			var err error
			bySeries, err = g.load(ctx, m, s.Model, s.Pool)
			if err != nil {
				return nil, err
			}
			cache[key] = bySeries
		}
		h := bySeries[s]
		if h == nil {
			h = &historyRuns{}
			bySeries[s] = h
		}
		cut, open := h.cutOnce(g.cfg, s, g.accepted)
		passed := r.Status == protocol.StatusPassed
		j, conf := g.cfg.confirm(r, g.cfg.JudgeOn(passed, r.SamplesPerSec, cut), cut)
		if r.Status == "" {
			j.Verdict = VerdictUnfinished
		}
		value := r.SamplesPerSec
		if conf != nil && !conf.Pending {
			value = conf.Median
		}
		gr := GateRow{Job: r.Job, Model: r.Model, Pool: r.Pool, BatchSize: r.BatchSize, DataFormat: r.DataFormat,
			Value: value, Verdict: j.Verdict, Series: s, History: j.N, Points: j.Points, Sigma: j.Sigma, Band: j.Band, Confirmation: conf,
			OpenRegressions: open}
		gr.Suspect = conf == nil && passed && g.cfg.SuspectOn(r.SamplesPerSec, cut)
		if r.Untrusted() || protocol.UntrustedRun(m.Run) {
			gr.Trust = protocol.TrustUntrusted
		}
		if j.HasBaseline {
			b := j.Baseline
			gr.Baseline = &b
			if value > 0 {
				c := j.Change
				gr.Change = &c
			}
		}
		if !passed {
			gr.Reason = r.Reason
			if gr.Reason == "" {
				gr.Reason = failureWord(r.Status)
			}
		}
		out = append(out, gr)
	}
	return out, nil
}

func failureWord(s protocol.Status) string {
	if s == "" {
		return "did not finish"
	}
	return string(s)
}

// load reads the baseline results of one model and pool, grouped by series,
// oldest first, one per run, at most SegmentHorizon per series. Only trusted results are
// baselines: a result of the untrusted producer (protocol.Result.Untrusted,
// set by the worker from the stream it claimed the job from) never is,
// whatever branch its job names.
func (g *Gate) load(ctx context.Context, m *protocol.RunManifest, model, pool string) (map[Series]*historyRuns, error) {
	bySeries := map[Series][]*protocol.Result{}
	out := map[Series]*historyRuns{}
	if g.history == nil {
		return out, nil
	}
	rs, err := g.history(ctx, index.Filter{Model: model, Pool: pool, Branch: g.cfg.BaselineBranch, Status: protocol.StatusPassed})
	if err != nil {
		return nil, fmt.Errorf("gate: history of %s on %s: %w", model, pool, err)
	}
	for _, r := range rs {
		if r.Run == m.Run || r.Status != protocol.StatusPassed || r.Source.Branch != g.cfg.BaselineBranch ||
			!(r.Measurements.SamplesPerSec > 0) || math.IsInf(r.Measurements.SamplesPerSec, 0) {
			continue
		}
		if !m.CreatedAt.IsZero() && r.RunCreatedAt.After(m.CreatedAt) {
			continue // a later run is not history of this one
		}
		if !BaselinePCC(r) {
			continue // passed only a check set too low to trust
		}
		if r.Untrusted() {
			continue // the untrusted producer's: judged, never a baseline
		}
		s := SeriesOf(r)
		bySeries[s] = append(bySeries[s], r)
	}
	for s, hist := range bySeries {
		sort.SliceStable(hist, func(i, j int) bool {
			a, b := hist[i], hist[j]
			if !a.RunCreatedAt.Equal(b.RunCreatedAt) {
				return a.RunCreatedAt.Before(b.RunCreatedAt)
			}
			if !a.FinishedAt.Equal(b.FinishedAt) {
				return a.FinishedAt.Before(b.FinishedAt)
			}
			return a.Job < b.Job
		})
		runs, attempts := onePerRun(hist)
		if cut := len(runs) - SegmentHorizon; cut > 0 {
			runs, attempts = runs[cut:], attempts[cut:]
		}
		out[s] = &historyRuns{runs: runs, attempts: attempts}
	}
	return out, nil
}

// historyRuns is a series' history, one result per run, and how many
// passed attempts each run had; cut and open are its cut and open
// regressions once cutOnce made them.
type historyRuns struct {
	runs     []*protocol.Result
	attempts []int
	cut      *Segmentation
	open     []OpenRegression
}

// cutOnce cuts the history (the first time: every job of the series
// judged against it shares the cut) and lists its open regressions.
func (h *historyRuns) cutOnce(c GateConfig, s Series, accepted []Acceptance) (*Segmentation, []OpenRegression) {
	if h.cut == nil {
		vals := make([]float64, len(h.runs))
		for i, r := range h.runs {
			vals[i] = r.Measurements.SamplesPerSec
		}
		cut := c.SegmentRuns(vals, h.attempts)
		h.cut, h.open = &cut, c.OpenRegressions(s, h.runs, &cut, accepted)
	}
	return h.cut, h.open
}

// ApplyVerdicts copies the change and verdict of each gate row onto the
// summary row of the same job; a row judged on its attempts gets their
// median (Row.Median), and with no reason a note of its attempts.
func ApplyVerdicts(rows []runstate.Row, verdicts []GateRow) {
	by := make(map[string]*GateRow, len(verdicts))
	for i := range verdicts {
		by[verdicts[i].Job] = &verdicts[i]
	}
	for i := range rows {
		if v, ok := by[rows[i].Job]; ok {
			rows[i].Change = v.Change
			rows[i].Verdict = string(v.Verdict)
			if c := v.Confirmation; c != nil && !c.Pending {
				rows[i].Median = c.Median
			}
			if c := v.Confirmation; c != nil && rows[i].Reason == "" {
				rows[i].Reason = confirmNote(c)
			}
		}
	}
}

// GateCounts counts a run's verdicts.
type GateCounts struct {
	Total, OK, Regressions, Improved, InsufficientHistory, Failed int
	// NotReproduced counts suspected regressions their repeats cleared.
	NotReproduced int
	// Unfinished counts jobs that had not ended (VerdictUnfinished).
	Unfinished int
}

// CountVerdicts counts verdicts by kind.
func CountVerdicts(verdicts []GateRow) GateCounts {
	c := GateCounts{Total: len(verdicts)}
	for _, v := range verdicts {
		switch v.Verdict {
		case VerdictOK:
			c.OK++
		case VerdictRegression:
			c.Regressions++
		case VerdictImproved:
			c.Improved++
		case VerdictInsufficientHistory:
			c.InsufficientHistory++
		case VerdictFailed:
			c.Failed++
		case VerdictUnfinished:
			c.Unfinished++
		case VerdictNotReproduced:
			c.NotReproduced++
		}
	}
	return c
}

// Outcome is the overall result of a run, the word reports lead with.
type Outcome string

// Outcomes, by precedence: a wait that timed out with jobs unfinished
// is TIMED OUT (exit 3: the run goes on, so it has no verdict yet);
// otherwise a job that did not pass makes the run FAIL (exit 1) even when
// another job regressed; otherwise a regression with the gate on makes it
// REGRESSION (exit 2); otherwise PASS.
const (
	OutcomePass       Outcome = "PASS"
	OutcomeFail       Outcome = "FAIL"
	OutcomeRegression Outcome = "REGRESSION"
	OutcomeTimedOut   Outcome = "TIMED OUT"
)

// RunReport is a finished (or timed-out) run as the JUnit and Markdown
// reports see it.
type RunReport struct {
	// Manifest is the run (required).
	Manifest *protocol.RunManifest
	// Rows are the run's jobs; Change and Verdict set when compared.
	Rows []runstate.Row
	// Verdicts are the gate's rows, when history was compared (nil
	// otherwise).
	Verdicts []GateRow
	// Gate is the gate's configuration (defaults filled) when verdicts
	// were computed.
	Gate GateConfig
	// GateOn says the gate was applied: a regression fails the run.
	// Without it, verdicts are informational.
	GateOn bool
	// TimedOut says the waiting for the run ended at its timeout: its
	// unfinished jobs make it TIMED OUT rather than FAIL.
	TimedOut bool
	// Warnings are what the waiter noticed that explain a run that does
	// not end (no live worker serves a pool; a job reported ended whose
	// result is not in the store read), one sentence each; nil when none.
	Warnings []string
}

// Untrusted reports whether the report is of the untrusted producer: its
// run is named as that producer's runs are, or a result is untrusted.
func (r *RunReport) Untrusted() bool {
	if r.Manifest != nil && protocol.UntrustedRun(r.Manifest.Run) {
		return true
	}
	for _, row := range r.Rows {
		if row.Untrusted() {
			return true
		}
	}
	return false
}

// Outcome is PASS, FAIL, REGRESSION or TIMED OUT (see the constants for
// precedence).
func (r *RunReport) Outcome() Outcome {
	if r.TimedOut && r.Unfinished() > 0 {
		return OutcomeTimedOut
	}
	regression := false
	for _, row := range r.Rows {
		if row.Status != protocol.StatusPassed {
			return OutcomeFail
		}
		if row.Verdict == string(VerdictRegression) {
			regression = true
		}
	}
	if regression && r.GateOn {
		return OutcomeRegression
	}
	return OutcomePass
}

// Counts counts the run's rows: passed, failed (ended without passing;
// unfinished jobs are not counted, see Unfinished), regressions and
// improvements.
func (r *RunReport) Counts() (passed, failed, regressions, improved int) {
	for _, row := range r.Rows {
		switch row.Status {
		case protocol.StatusPassed:
			passed++
		case "":
		default:
			failed++
		}
		switch Verdict(row.Verdict) {
		case VerdictRegression:
			regressions++
		case VerdictImproved:
			improved++
		}
	}
	return
}

// Unfinished counts the run's jobs that had not ended (no status): rows
// and their confirmation repeats.
func (r *RunReport) Unfinished() int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == "" {
			n++
		}
		for _, a := range row.Repeats {
			if a.Status == "" {
				n++
			}
		}
	}
	return n
}

// VerdictOf returns the gate row of job, if any.
func (r *RunReport) VerdictOf(job string) *GateRow {
	for i := range r.Verdicts {
		if r.Verdicts[i].Job == job {
			return &r.Verdicts[i]
		}
	}
	return nil
}

// CaseName is the display name of a row, e.g. "resnet50/n150/bs8/bfloat16".
func CaseName(row runstate.Row) string {
	return fmt.Sprintf("%s/%s/bs%d/%s", row.Model, row.Pool, row.BatchSize, row.DataFormat)
}

// CaseNames names every row, adding the job id to names that repeat (two
// jobs of one cell that differ only by test, runner or labels).
func CaseNames(rows []runstate.Row) []string {
	count := map[string]int{}
	for _, r := range rows {
		count[CaseName(r)]++
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		n := CaseName(r)
		if count[n] > 1 {
			n += "/" + r.Job
		}
		out[i] = n
	}
	return out
}

// RegressionText explains a regression or improvement in one line.
func RegressionText(v *GateRow, cfg GateConfig) string {
	if v == nil || v.Baseline == nil {
		return ""
	}
	dir := "below"
	if v.Value > *v.Baseline {
		dir = "above"
	}
	pct := 0.0
	if v.Change != nil {
		pct = math.Abs(*v.Change)
	}
	return fmt.Sprintf("%s samples/sec is %.1f%% %s the baseline %s (median of the last %d passed runs at the series' current level on %s; threshold %s, noise band ±%.1f)",
		runstate.FmtRate(v.Value), pct*100, dir, runstate.FmtRate(*v.Baseline), v.History, cfg.BaselineBranch,
		FmtPercent(cfg.Threshold), v.Band)
}

// RowsFromResults builds summary rows from a run's stored results, in
// manifest order; a job of the manifest without a result is a row with no
// status ("no result").
func RowsFromResults(m *protocol.RunManifest, results []*protocol.Result) []runstate.Row {
	by := map[string]*protocol.Result{}
	for _, r := range results {
		by[r.Job] = r
	}
	var rows []runstate.Row
	seen := map[string]bool{}
	repeats := runstate.RepeatsOf(m)
	add := func(mj protocol.ManifestJob) {
		seen[mj.ID] = true
		if mj.Repeat > 0 {
			return // an attempt of its original's row
		}
		row := runstate.Row{Job: mj.ID, Model: mj.Model, Pool: mj.Pool, Runner: mj.Runner, BatchSize: mj.BatchSize, DataFormat: mj.DataFormat}
		if res, ok := by[mj.ID]; ok {
			row.Result = res
			row.Status = res.Status
			row.SamplesPerSec = res.Measurements.SamplesPerSec
			row.PCC = res.PCC.Value
			row.Attempt = res.Attempt
			if res.Error != nil {
				row.Reason = res.Error.Message
			}
		} else {
			row.Reason = "no result"
		}
		for _, rj := range repeats[mj.ID] {
			seen[rj.ID] = true
			row.Repeats = append(row.Repeats, runstate.AttemptOf(rj.ID, rj.Repeat, by[rj.ID]))
		}
		rows = append(rows, row)
	}
	for _, mj := range m.Jobs {
		add(mj)
	}
	for _, r := range results {
		if !seen[r.Job] {
			add(manifestJobOf(r))
		}
	}
	return rows
}

// ManifestFromResults reconstructs a run's manifest from its results, for
// runs whose manifest is not in the store.
func ManifestFromResults(run string, results []*protocol.Result) *protocol.RunManifest {
	m := &protocol.RunManifest{Schema: protocol.SchemaManifest, Run: run}
	for _, r := range results {
		if m.CreatedAt.IsZero() {
			m.CreatedAt = r.RunCreatedAt
			m.Source = r.Source
		}
		m.Jobs = append(m.Jobs, manifestJobOf(r))
	}
	return m
}

func manifestJobOf(r *protocol.Result) protocol.ManifestJob {
	return protocol.ManifestJob{ID: r.Job, Pool: r.Pool, Runner: r.Runner, Model: r.Benchmark.Model, Test: r.Benchmark.Test,
		BatchSize: r.Benchmark.BatchSize, DataFormat: r.Benchmark.DataFormat}
}

// BaselinePCCFloor is the lowest required PCC a passed result may have
// been judged at and still enter a baseline: a job may set limits.pcc_min
// as low as it likes (1e-9 passes anything), and its result records, but
// a speed measured on wrong answers is no baseline.
const BaselinePCCFloor = 0.9

// BaselinePCC reports whether r's accuracy check was strict enough for r
// to enter a baseline: judged at BaselinePCCFloor or above, or by the
// harness itself (Min 0: the upstream harness judged at its own PCC).
func BaselinePCC(r *protocol.Result) bool {
	return r.PCC.Min == 0 || r.PCC.Min >= BaselinePCCFloor
}
