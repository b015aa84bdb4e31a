package ui

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

func urlQuery(s string) string { return url.QueryEscape(s) }

type seriesData struct {
	Series gate.Series
	Name   string
	Days   int
	// Chart is the series' chart, drawn by producer/chart.
	Chart  template.HTML
	Branch string // the baseline branch
	Others int    // runs of other branches
	Rows   []gate.SeriesPoint
	// Open are the series' open and accepted regressions after its last
	// run (gate.SeriesOpen); Warn says what of them could not be read.
	Open []openBox
	Warn []string
	// bisectOf is the series' one bisect (bisect), made once for the page.
	bisectOf   *bisectLink
	bisectAt   int
	Passed     int
	Failed     int
	Regressed  int
	Elapsed    string // time to query and judge the series
	GateConfig string
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ser := gate.Series{Model: q.Get("model"), Pool: q.Get("pool"), DataFormat: q.Get("format"), Runner: q.Get("runner"), Test: q.Get("test")}
	if ser.Model == "" || ser.Pool == "" {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("a series needs model and pool (and batch, format, runner)"))
		return
	}
	if b := q.Get("batch"); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("batch %q: want a positive integer", b))
			return
		}
		ser.BatchSize = n
	}
	days := 365
	if v := q.Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3660 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("days %q: want 1 to 3660", v))
			return
		}
		days = n
	}
	if _, cancel, h := s.pageHealth(r); !h.Store {
		cancel()
		s.fail(w, r, http.StatusServiceUnavailable, errors.New("a series is read from the result store, which is not answering"))
		return
	} else {
		cancel()
	}
	start := time.Now()
	rs, _, err := index.Query(r.Context(), s.cfg.Store, index.Filter{Model: ser.Model, Pool: ser.Pool,
		Since: time.Now().UTC().AddDate(0, 0, -days)})
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	as, warn, err := gate.ReadAcceptances(r.Context(), s.cfg.Store)
	if err != nil {
		warn = append(warn, fmt.Sprintf("the accepted regressions could not be read (%v): every step down is listed as open", err))
	}
	pts, open := gate.SeriesOpen(rs, ser, s.cfg.Gate, as)
	d := seriesData{Series: ser, Name: ser.Name(), Days: days, GateConfig: s.cfg.Gate.String(), Branch: s.cfg.Gate.BaselineBranch, Open: openBoxes(pts, open), Warn: warn,
		Chart: chart.SeriesSVG(pts, chart.SeriesOptions{ID: "chart", Branch: s.cfg.Gate.BaselineBranch, Title: pointTitle, RunLink: "/runs/", Open: open})}
	d.count(pts)
	// The table lists the newest first.
	for i := len(pts) - 1; i >= 0; i-- {
		d.Rows = append(d.Rows, pts[i])
	}
	if len(d.Rows) > 200 {
		d.Rows = d.Rows[:200]
	}
	d.bisectOf, d.bisectAt = d.bisect()
	for _, o := range d.Open {
		if o.Bisect != "" {
			d.bisectOf = nil // the box above the chart shows it
		}
	}
	d.Elapsed = time.Since(start).Round(100 * time.Microsecond).String()
	s.render(w, r, "series", ser.Name(), false, d)
}

// count tallies the series' runs for the summary: passed (with a
// figure) or not, regressions, and runs off the baseline branch.
func (d *seriesData) count(pts []gate.SeriesPoint) {
	for _, p := range pts {
		if p.Result.Status == protocol.StatusPassed && p.Value() > 0 {
			d.Passed++
		} else {
			d.Failed++
		}
		if p.Judgement.Verdict == gate.VerdictRegression {
			d.Regressed++
		}
		if !p.OnBaseline {
			d.Others++
		}
	}
}

// pointTitle is the hover text of a run on the series chart: when, the
// branch and commit, its status and samples/sec, the verdict, the run.
func pointTitle(p gate.SeriesPoint) string {
	r := p.Result
	commit := r.Source.Commit
	if commit == "" {
		commit = "no commit"
	}
	rate := runstate.FmtRate(p.Value())
	if p.Median > 0 {
		rate += fmt.Sprintf(" (median of %d attempts)", p.Attempts())
	}
	title := fmt.Sprintf("%s  %s@%s\n%s: %s samples/s (%s)\nrun %s", r.RunCreatedAt.UTC().Format("2006-01-02 15:04"),
		cmp.Or(r.Source.Branch, "?"), runstate.ShortCommit(commit), r.Status, rate, p.Judgement.Verdict, r.Run)
	if n := p.SegmentNote(); n != "" {
		title += "\n" + n
	}
	if r.Untrusted() {
		title += "\n" + runstate.UntrustedNote
	}
	return title
}
