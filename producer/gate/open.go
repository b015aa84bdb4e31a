package gate

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// OpenRegression is a step down of a series that is still open: the series
// has not come back to the level before it (within the threshold), whatever
// later commits did. An accepted one (Accepted) is listed as accepted. A
// later commit at the lower level passes its own gate (it caused nothing
// new); the open regression is listed beside it until it is fixed or
// accepted.
type OpenRegression struct {
	Series Series `json:"series"`
	Name   string `json:"series_name"`
	// Since is the first commit seen at the lower level (the step's first
	// run, SinceRun, created At); LastGood the commit of the run before it
	// (LastGoodRun).
	Since       string    `json:"since_commit"`
	SinceRun    string    `json:"since_run"`
	At          time.Time `json:"since_time"`
	LastGood    string    `json:"last_good_commit,omitempty"`
	LastGoodRun string    `json:"last_good_run,omitempty"`
	// Before is the level before the step, Level the step's segment's,
	// Now the series' current level (samples/sec); Change is
	// (Level - Before) / Before.
	Before float64 `json:"before"`
	Level  float64 `json:"level"`
	Now    float64 `json:"now"`
	Change float64 `json:"change"`
	// Runs is how many runs of the history are at or after the step
	// (runs since: later steps' runs too).
	Runs int `json:"runs"`
	// Accepted is the acceptance record, when someone accepted the step.
	Accepted *Acceptance `json:"accepted,omitempty"`
	// Bisect is the `benchfleet results bisect` command between LastGood
	// and Since: commits between them were not measured, so Since is the
	// first bad commit only if it directly follows LastGood.
	Bisect string `json:"bisect,omitempty"`
}

// IsOpen says the regression is open: not accepted.
func (o *OpenRegression) IsOpen() bool { return o.Accepted == nil }

// Key identifies the step: its series and first commit (or run).
func (o *OpenRegression) Key() string {
	return o.Series.ID() + "@" + cmp.Or(o.Since, o.SinceRun)
}

// Text is the open regression in one line, e.g. "resnet50/n150/bs8/bfloat16:
// open regression since 9f8e7d6c5b4a (run ci-…, 2026-12-01): 1,000.0 → 700.0
// samples/sec (-30.0%), 3 runs since; last good 1a2b3c4d5e6f".
func (o *OpenRegression) Text() string {
	word := "open regression"
	if !o.IsOpen() {
		word = "accepted regression"
	}
	s := fmt.Sprintf("%s: %s since %s (run %s, %s): %s → %s samples/sec (%+.1f%%), %s",
		o.Name, word, runstate.ShortCommit(cmp.Or(o.Since, "no commit")), o.SinceRun, o.At.UTC().Format("2006-01-02"),
		runstate.FmtRate(o.Before), runstate.FmtRate(o.Level), 100*o.Change, runstate.Count(o.Runs, "run")+" since")
	if o.LastGood != "" {
		s += "; last good " + runstate.ShortCommit(o.LastGood)
	}
	if a := o.Accepted; a != nil {
		s += fmt.Sprintf("; accepted by %s on %s: %q", a.By, a.At.UTC().Format("2006-01-02"), a.Reason)
	}
	return s
}

// OpenRegressions lists the steps down of series s's history that are
// still open or were accepted, oldest first (a tentative one, a step of
// one unconfirmed run that the next run has not continued, is not yet a
// step). hist are the history's runs
// (one result each, the value it was cut at) and g its cut (c.Segment);
// as are the acceptance records.
func (c GateConfig) OpenRegressions(s Series, hist []*protocol.Result, g *Segmentation, as []Acceptance) []OpenRegression {
	var out []OpenRegression
	now := g.Level()
	for k := 1; k < len(g.Segments); k++ {
		seg := &g.Segments[k]
		if seg.Step != StepDown || seg.tentative || seg.Start >= len(hist) || !(seg.Before > 0) {
			continue
		}
		if now >= seg.Before*(1-c.Threshold) {
			continue // back to the level before it: fixed
		}
		first := hist[seg.Start]
		o := OpenRegression{Series: s, Name: s.Name(), Since: first.Source.Commit, SinceRun: first.Run, At: first.RunCreatedAt,
			Before: seg.Before, Level: seg.Level(c.Window), Now: now, Runs: g.Points - pointsBefore(g, k)}
		o.Change = (o.Level - o.Before) / o.Before
		if prev := g.Segments[k-1]; prev.End-1 < len(hist) {
			good := hist[prev.End-1]
			o.LastGood, o.LastGoodRun = good.Source.Commit, good.Run
		}
		o.Accepted = AcceptanceOf(as, s, o.Since)
		if protocol.ValidCommit(o.LastGood) && protocol.ValidCommit(o.Since) && o.LastGood != o.Since {
			o.Bisect = BisectCommand(s, o.LastGood, o.Since)
		}
		out = append(out, o)
	}
	return out
}

// pointsBefore counts the runs of g's segments before segment k.
func pointsBefore(g *Segmentation, k int) int {
	n := 0
	for _, s := range g.Segments[:k] {
		n += s.Len()
	}
	return n
}

// BisectCommand is the `benchfleet results bisect` command that finds the
// first bad commit of series s between good and bad (--mirror DIR: a
// clone of the repository), quoted for a POSIX shell.
func BisectCommand(s Series, good, bad string) string {
	args := []string{"benchfleet", "results", "bisect", "--model", s.Model, "--batch-size", strconv.Itoa(s.BatchSize),
		"--data-format", s.DataFormat, "--pool", s.Pool, "--runner", s.Runner}
	if s.Test != "" {
		args = append(args, "--test", s.Test)
	}
	args = append(args, "--good", good, "--bad", bad, "--mirror", "DIR")
	for i, a := range args {
		args[i] = ShellQuote(a)
	}
	return strings.Join(args, " ")
}

// ShellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and _ - . / : = , +.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// OpenRegressions lists the open and accepted regressions of the series
// the run's jobs are of, each once (jobs of one series share them), in
// the order of the verdicts.
func (r *RunReport) OpenRegressions() []OpenRegression {
	var out []OpenRegression
	seen := map[string]bool{}
	for _, v := range r.Verdicts {
		for _, o := range v.OpenRegressions {
			if k := o.Key(); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
		}
	}
	return out
}
