package gate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// Confirmation before failing: a job the gate suspects of a regression is
// run again (RepeatJob: Job.Repeat 1..N, high priority, avoiding the board
// of the suspect result), and the series is judged on the median of the
// candidate's attempts (JudgeAttempts). Only a regression the median
// confirms fails the gate; one it does not is VerdictNotReproduced.

// DefaultRepeats is how many confirmation repeats `submit --gate` gives a
// suspected regression.
const DefaultRepeats = 2

// Confirmation is how a suspected regression fared on its repeats: every
// attempt (the original first) and the median the series was judged on.
type Confirmation struct {
	Attempts []runstate.Attempt `json:"attempts"`
	// Median is the median samples/sec of the attempts that passed.
	Median float64 `json:"median"`
	// Reproduced says the median is a regression too: the gate fails.
	// False while Pending.
	Reproduced bool `json:"reproduced"`
	// Pending says a repeat has not ended: the row is judged on the
	// original alone until they all have (Median is of the attempts so far).
	Pending bool `json:"pending,omitempty"`
}

// Finding is the confirmation in words: "pending", "reproduced" or "not
// reproduced".
func (c *Confirmation) Finding() string {
	switch {
	case c.Pending:
		return "pending"
	case c.Reproduced:
		return "reproduced"
	}
	return "not reproduced"
}

// medianScale is how much narrower the noise band of the median of n
// attempts is than that of one: the median's standard error relative to
// one value's for normal noise, sqrt(π/2n), at most 1.
func medianScale(n int) float64 {
	if n <= 1 {
		return 1
	}
	return min(1, math.Sqrt(math.Pi/(2*float64(n))))
}

// JudgeAttempts judges a series on the median of a candidate's attempts
// (samples/sec of the original and of the repeats that passed, each above
// 0) against history, as Judge judges one value, with the noise band of a
// median of that many attempts (NoiseK·medianScale(n)·σ; n = 1 is Judge
// of that attempt). The threshold is the same.
func (c GateConfig) JudgeAttempts(history, attempts []float64) Judgement {
	g := c.Segment(history)
	return c.JudgeAttemptsOn(&g, attempts)
}

// JudgeAttemptsOn is JudgeAttempts against a history already cut.
func (c GateConfig) JudgeAttemptsOn(g *Segmentation, attempts []float64) Judgement {
	var vals []float64
	for _, v := range attempts {
		if v > 0 && !math.IsInf(v, 0) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return c.JudgeOn(true, 0, g)
	}
	c.NoiseK *= medianScale(len(vals))
	return c.JudgeOn(true, runstate.Median(vals), g)
}

// Suspect reports whether value (a passed job's samples/sec) is worth
// confirming: a regression by Judge with the noise band its 1+Repeats
// attempts will be judged at (JudgeAttempts). Every regression Judge finds
// is a suspect; with Repeats 0 the suspects are exactly those.
func (c GateConfig) Suspect(value float64, history []float64) bool {
	g := c.Segment(history)
	return c.SuspectOn(value, &g)
}

// SuspectOn is Suspect against a history already cut.
func (c GateConfig) SuspectOn(value float64, g *Segmentation) bool {
	c.NoiseK *= medianScale(1 + c.Repeats)
	return c.JudgeOn(true, value, g).Verdict == VerdictRegression
}

// confirm judges row r, the original judged j against hist, on its
// attempts when it has repeats. The verdict is the median's; a regression
// of the original that the median does not show is not reproduced. While
// a repeat has not ended the verdict stays the original's.
func (c GateConfig) confirm(r runstate.Row, j Judgement, hist *Segmentation) (Judgement, *Confirmation) {
	if len(r.Repeats) == 0 || r.Status != protocol.StatusPassed {
		return j, nil
	}
	conf := &Confirmation{Attempts: append([]runstate.Attempt{runstate.AttemptOf(r.Job, 0, r.Result)}, r.Repeats...)}
	conf.Attempts[0].SamplesPerSec = r.SamplesPerSec
	vals := make([]float64, 0, len(conf.Attempts))
	pending := false
	for _, a := range conf.Attempts {
		switch a.Status {
		case protocol.StatusPassed:
			vals = append(vals, a.SamplesPerSec)
		case "":
			pending = true
		}
	}
	jm := c.JudgeAttemptsOn(hist, vals)
	if jm.HasBaseline {
		conf.Median = jm.Baseline * (1 + jm.Change)
	}
	if pending {
		conf.Pending = true
		return j, conf // not judged on its attempts until they have all ended
	}
	conf.Reproduced = jm.Verdict == VerdictRegression
	if j.Verdict == VerdictRegression && !conf.Reproduced && jm.Verdict != VerdictInsufficientHistory {
		jm.Verdict = VerdictNotReproduced
	}
	return jm, conf
}

// AttemptsText lists a confirmation's attempts in one line, e.g. "attempts
// 812.0 (w1/0), 1001.2 (w2/1, repeat 1), 998.0 (w2/0, repeat 2): median
// 998.0, not reproduced".
func AttemptsText(c *Confirmation) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("attempts ")
	for i, a := range c.Attempts {
		if i > 0 {
			b.WriteString(", ")
		}
		v := runstate.FmtRate(a.SamplesPerSec)
		if a.Status != protocol.StatusPassed {
			v = runstate.StatusWord(a.Status)
		}
		b.WriteString(v)
		var notes []string
		if a.Board != "" {
			notes = append(notes, a.Board)
		}
		if a.Repeat > 0 {
			notes = append(notes, "repeat "+strconv.Itoa(a.Repeat))
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, ", ") + ")")
		}
	}
	fmt.Fprintf(&b, ": median %s, %s", runstate.FmtRate(c.Median), c.Finding())
	return b.String()
}

// confirmNote is a confirmation in a few words for a table's note column,
// e.g. "3 attempts, median 999.9: not reproduced".
func confirmNote(c *Confirmation) string {
	return fmt.Sprintf("%d attempts, median %s: %s", len(c.Attempts), runstate.FmtRate(c.Median), c.Finding())
}

// MergeRepeats is own (the manifest this process submitted or attached
// to) with the repeats of stored (bench-runs' copy) that repeatsOf counts
// for own's jobs and own lacks: a stored manifest is not adopted whole.
func MergeRepeats(own, stored *protocol.RunManifest) *protocol.RunManifest {
	have := map[string]bool{}
	for _, j := range own.Jobs {
		have[j.ID] = true
	}
	m := *own
	m.Jobs = append([]protocol.ManifestJob(nil), own.Jobs...)
	for _, j := range stored.Jobs {
		if j.Repeat > 0 && !have[j.ID] {
			m.Jobs = append(m.Jobs, j)
		}
	}
	// Only what counts for own's jobs: a stored entry that is no repeat
	// of them is dropped.
	counted := runstate.RepeatsOf(&m)
	out := m.Jobs[:0]
	for _, j := range m.Jobs {
		if j.Repeat == 0 || have[j.ID] || slices.ContainsFunc(counted[j.Of], func(r protocol.ManifestJob) bool { return r.ID == j.ID }) {
			out = append(out, j)
		}
	}
	m.Jobs = out
	return &m
}

// RepeatJob is repeat k (1..protocol.MaxRepeat) of the job of run m whose
// passed result is r: the same cell (benchmark, source, labels, limits as
// its manifest entry mj records them) with Repeat k, at high priority
// (normal for a run of the untrusted producer, which has no high queue),
// avoiding the board r ran on. Its id is deterministic, so publishing it
// twice queues it once.
func RepeatJob(m *protocol.RunManifest, mj protocol.ManifestJob, r *protocol.Result, k int) (*protocol.Job, error) {
	j := &protocol.Job{Schema: protocol.SchemaJob, Run: m.Run, CreatedAt: m.CreatedAt, Pool: r.Pool,
		Priority: protocol.PriorityHigh, Runner: r.Runner, Benchmark: r.Benchmark, Source: r.Source,
		Labels: r.Labels, Repeat: k, Avoid: []string{r.Board()}}
	if protocol.RunTrust(m.Run).Untrusted() || r.Untrusted() {
		j.Priority = protocol.PriorityNormal
	}
	j.Limits.PCCMin = r.PCC.Min
	for _, f := range strings.Fields(runstate.CellHead(mj.Cell)) {
		if v, ok := strings.CutPrefix(f, "timeout="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				j.Limits.Timeout = protocol.Duration(d)
			}
		}
		if v, ok := strings.CutPrefix(f, "pcc_min="); ok {
			if p, err := strconv.ParseFloat(v, 64); err == nil {
				j.Limits.PCCMin = p
			}
		}
	}
	j.Normalize()
	var cell string
	cell, j.ID = j.CellID()
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("repeat %d of job %s: %w", k, mj.ID, err)
	}
	if cell != runstate.RepeatCell(mj.Cell, k) {
		return nil, fmt.Errorf("repeat %d of job %s: its result %s is not of the job's cell", k, mj.ID, r.Job)
	}
	return j, nil
}
