package ui

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

func urlQuery(s string) string { return url.QueryEscape(s) }

// Chart geometry (SVG user units).
const (
	chartW, chartH         = 960, 340
	padL, padR, padT, padB = 70, 20, 20, 40
)

// pointView is one run drawn on the series chart.
type pointView struct {
	X, Y   float64
	Passed bool
	// OnBaseline says the result is on the gate's baseline branch: the
	// line joins those; results of other branches are points only.
	OnBaseline bool
	Verdict    string
	Title      string // shown on hover (SVG <title>)
	Href       string
}

type tick struct {
	Pos    float64
	Label  string
	Anchor string // text-anchor of the label
}

type seriesData struct {
	Series   gate.Series
	Name     string
	Days     int
	Points   []pointView
	Line     string // polyline points through the passed results on the baseline branch
	Branch   string // the baseline branch
	Others   int    // results of other branches
	Band     string // polygon of the baseline ± noise band
	Baseline string // polyline of the rolling baseline
	YTicks   []tick
	XTicks   []tick
	Rows     []gate.SeriesPoint
	// bisectOf is the series' one bisect (bisect), made once for the page.
	bisectOf   *bisectLink
	bisectAt   int
	Passed     int
	Failed     int
	Regressed  int
	Elapsed    string // time to query and judge the series
	GateConfig string
	W, H       int
	PadL, PadT int
	PlotW      int
	PlotH      int
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
	pts := gate.SeriesPoints(rs, ser, s.cfg.Gate)
	d := seriesData{Series: ser, Name: ser.Name(), Days: days, GateConfig: s.cfg.Gate.String(), Branch: s.cfg.Gate.BaselineBranch,
		W: chartW, H: chartH, PadL: padL, PadT: padT, PlotW: chartW - padL - padR, PlotH: chartH - padT - padB}
	layout(&d, pts)
	// The table lists the newest first.
	for i := len(pts) - 1; i >= 0; i-- {
		d.Rows = append(d.Rows, pts[i])
	}
	if len(d.Rows) > 200 {
		d.Rows = d.Rows[:200]
	}
	d.bisectOf, d.bisectAt = d.bisect()
	d.Elapsed = time.Since(start).Round(100 * time.Microsecond).String()
	s.render(w, r, "series", ser.Name(), false, d)
}

// layout places the points: x by run creation time, y fitted to the
// passed values and the noise band (never from failed points, which sit
// on the bottom edge).
func layout(d *seriesData, pts []gate.SeriesPoint) {
	if len(pts) == 0 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		v := p.Value()
		if p.Result.Status == protocol.StatusPassed && v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
		if j := p.Judgement; j.HasBaseline {
			lo, hi = min(lo, j.Baseline-j.Band), max(hi, j.Baseline+j.Band)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if hi-lo < 1e-9*math.Max(1, math.Abs(hi)) {
		lo, hi = lo*0.95, hi*1.05+1e-9
	}
	span := hi - lo
	lo, hi = lo-0.05*span, hi+0.05*span
	t0, t1 := pts[0].Result.RunCreatedAt, pts[len(pts)-1].Result.RunCreatedAt
	if !t1.After(t0) {
		t0, t1 = t0.Add(-time.Hour), t1.Add(time.Hour)
	}
	pw, ph := float64(d.PlotW), float64(d.PlotH)
	x := func(t time.Time) float64 { return padL + pw*float64(t.Sub(t0))/float64(t1.Sub(t0)) }
	y := func(v float64) float64 { return padT + ph*(1-(v-lo)/(hi-lo)) }
	var line, upper, lower, base []string
	for _, p := range pts {
		r := p.Result
		v := p.Value()
		pv := pointView{X: round1(x(r.RunCreatedAt)), Passed: r.Status == protocol.StatusPassed && v > 0,
			OnBaseline: p.OnBaseline, Verdict: string(p.Judgement.Verdict), Href: "/runs/" + r.Run}
		if !pv.OnBaseline {
			d.Others++
		}
		if pv.Passed {
			pv.Y = round1(y(v))
			if pv.OnBaseline {
				line = append(line, fmt.Sprintf("%.1f,%.1f", pv.X, pv.Y))
			}
			d.Passed++
		} else {
			pv.Y = padT + ph
			d.Failed++
		}
		if p.Judgement.Verdict == gate.VerdictRegression {
			d.Regressed++
		}
		commit := r.Source.Commit
		if commit == "" {
			commit = "no commit"
		}
		rate := runstate.FmtRate(v)
		if p.Median > 0 {
			rate += fmt.Sprintf(" (median of %d attempts)", p.Attempts())
		}
		pv.Title = fmt.Sprintf("%s  %s@%s\n%s: %s samples/s (%s)\nrun %s", r.RunCreatedAt.UTC().Format("2006-01-02 15:04"),
			cmpOr(r.Source.Branch, "?"), runstate.ShortCommit(commit), r.Status, rate, pv.Verdict, r.Run)
		if r.Untrusted() {
			pv.Title += "\n" + runstate.UntrustedNote
		}
		if j := p.Judgement; j.HasBaseline {
			xs := pv.X
			upper = append(upper, fmt.Sprintf("%.1f,%.1f", xs, y(j.Baseline+j.Band)))
			lower = append(lower, fmt.Sprintf("%.1f,%.1f", xs, y(j.Baseline-j.Band)))
			base = append(base, fmt.Sprintf("%.1f,%.1f", xs, y(j.Baseline)))
		}
		d.Points = append(d.Points, pv)
	}
	d.Line = strings.Join(line, " ")
	d.Baseline = strings.Join(base, " ")
	if len(upper) > 0 {
		for i := len(lower) - 1; i >= 0; i-- {
			upper = append(upper, lower[i])
		}
		d.Band = strings.Join(upper, " ")
	}
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		d.YTicks = append(d.YTicks, tick{Pos: round1(y(v)), Label: runstate.FmtRate(v)})
	}
	ts := make([]time.Time, 6)
	for i := range ts {
		ts[i] = t0.Add(time.Duration(float64(t1.Sub(t0)) * float64(i) / float64(len(ts)-1)))
	}
	for i, label := range timeLabels(ts) {
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case len(ts) - 1:
			anchor = "end"
		}
		d.XTicks = append(d.XTicks, tick{Pos: round1(x(ts[i])), Label: label, Anchor: anchor})
	}
}

// timeLabels labels the x-axis ticks ts (ascending, UTC) in the coarsest
// format that tells them all apart: dates for a span of days, minutes or
// seconds for a shorter one. Within one day the first label carries the
// date and the others the time only.
func timeLabels(ts []time.Time) []string {
	if len(ts) == 0 {
		return nil
	}
	first, last := ts[0].UTC(), ts[len(ts)-1].UTC()
	formats := []string{"2006-01-02", "01-02 15:04", "01-02 15:04:05", "01-02 15:04:05.000"}
	sameDay := first.Format("2006-01-02") == last.Format("2006-01-02")
	if sameDay {
		formats = []string{"15:04", "15:04:05", "15:04:05.000"}
	}
	var out []string
	for _, f := range formats {
		out = out[:0]
		seen := map[string]bool{}
		for _, t := range ts {
			l := t.UTC().Format(f)
			seen[l] = true
			out = append(out, l)
		}
		if len(seen) == len(ts) {
			break
		}
	}
	if sameDay {
		out[0] = first.Format("2006-01-02 ") + out[0]
	}
	return out
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
