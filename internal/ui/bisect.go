package ui

import (
	"strconv"
	"strings"

	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

// bisectLink is how to find the commit a regressed result of a series
// came in with: the `benchfleet results bisect` command between the
// series' last good commit before it and its own commit.
type bisectLink struct {
	Cmd  string
	Good string
	Bad  string
	// Repo is the repository the commits are of: the command's --mirror
	// DIR is a clone of it.
	Repo string
}

// BisectFor is the bisect of the row p of the series page (d.Rows, newest
// first): nil unless the gate judged p a regression and the series'
// history holds an older passed result on the baseline branch, of another
// commit of the same repository, that it did not (the last good commit).
func (d seriesData) BisectFor(p producer.SeriesPoint) *bisectLink {
	r := p.Result
	if p.Judgement.Verdict != producer.VerdictRegression || !protocol.ValidCommit(r.Source.Commit) {
		return nil
	}
	at := -1
	for i, q := range d.Rows {
		if q.Result == r {
			at = i
			break
		}
	}
	if at < 0 {
		return nil
	}
	for _, q := range d.Rows[at+1:] {
		g := q.Result
		if g.Status != protocol.StatusPassed || !q.OnBaseline || q.Judgement.Verdict == producer.VerdictRegression ||
			!protocol.ValidCommit(g.Source.Commit) || g.Source.Commit == r.Source.Commit || g.Source.Repo != r.Source.Repo {
			continue
		}
		s := producer.SeriesOf(r)
		args := []string{"benchfleet", "results", "bisect", "--model", s.Model, "--batch", strconv.Itoa(s.BatchSize),
			"--format", s.DataFormat, "--pool", s.Pool, "--runner", s.Runner}
		if s.Test != "" {
			args = append(args, "--test", s.Test)
		}
		args = append(args, "--good", g.Source.Commit, "--bad", r.Source.Commit, "--mirror", "DIR")
		for i, a := range args {
			args[i] = shellQuote(a)
		}
		return &bisectLink{Cmd: strings.Join(args, " "), Good: g.Source.Commit, Bad: r.Source.Commit, Repo: r.Source.Repo}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and _ - . / : = , +.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
