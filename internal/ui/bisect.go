package ui

import (
	"slices"

	"github.com/benchfleet/benchfleet/producer/gate"
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

// BisectFor is the bisect of the series page's row p, or nil: the page
// shows one, under the row bisect chose.
func (d seriesData) BisectFor(p gate.SeriesPoint) *bisectLink {
	if d.bisectOf == nil || d.Rows[d.bisectAt].Result != p.Result {
		return nil
	}
	return d.bisectOf
}

// bisect is the series' one bisect and the row (of d.Rows, newest first)
// it goes under, or nil: the newest regression the gate judged of a
// result that ran wheels (a provisioned build: only those can be
// bisected), on the baseline branch, back to the oldest regressed row
// since the series' last good result — an older passed result with wheels
// on the baseline branch, of another commit of the same repository, that
// the gate did not judge a regression. A row is a run (its attempts are
// one point); the page shows one bisect.
func (d seriesData) bisect() (*bisectLink, int) {
	built := func(q gate.SeriesPoint) bool {
		r := q.Result
		return q.OnBaseline && len(r.Source.Wheels) > 0 && protocol.ValidCommit(r.Source.Commit)
	}
	regressed := func(q gate.SeriesPoint) bool {
		return built(q) && q.Judgement.Verdict == gate.VerdictRegression
	}
	bad := slices.IndexFunc(d.Rows, regressed)
	if bad < 0 {
		return nil, -1
	}
	repo := d.Rows[bad].Result.Source.Repo
	for i := bad + 1; i < len(d.Rows); i++ {
		q := d.Rows[i]
		g, r := q.Result, d.Rows[bad].Result
		switch {
		case !built(q) || g.Source.Repo != repo:
		case regressed(q):
			bad = i
		case g.Status == protocol.StatusPassed && g.Source.Commit != r.Source.Commit:
			return bisectCmd(r, g), bad
		}
	}
	return nil, -1
}

// bisectCmd is the bisect of the regressed result r back to the good g.
func bisectCmd(r, g *protocol.Result) *bisectLink {
	return &bisectLink{Cmd: gate.BisectCommand(gate.SeriesOf(r), g.Source.Commit, r.Source.Commit), Good: g.Source.Commit, Bad: r.Source.Commit, Repo: r.Source.Repo}
}

// openBox is an open (or accepted) regression as the series page shows
// it above its chart: its bisect command only when the step's first run
// ran wheels (a provisioned build: only those can be bisected), with the
// repository the command's DIR is a clone of.
type openBox struct {
	gate.OpenRegression
	Repo string
}

// openBoxes are the boxes of open, the regressions of the series of pts.
func openBoxes(pts []gate.SeriesPoint, open []gate.OpenRegression) []openBox {
	out := make([]openBox, 0, len(open))
	for _, o := range open {
		b := openBox{OpenRegression: o}
		i := slices.IndexFunc(pts, func(p gate.SeriesPoint) bool { return p.OnBaseline && p.Result.Run == o.SinceRun })
		if i < 0 || len(pts[i].Result.Source.Wheels) == 0 {
			b.Bisect = ""
		} else {
			b.Repo = pts[i].Result.Source.Repo
		}
		out = append(out, b)
	}
	return out
}
