package chart_test

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// node is an element of a decoded SVG.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

func (n node) hasClass(c string) bool { return slices.Contains(strings.Fields(n.attr("class")), c) }

// all is every element under n (n too) that match accepts, in document
// order, with the title of each (its own title child, else its parent's).
func (n node) all(match func(node) bool) []node {
	var out []node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(match)...)
	}
	return out
}

func (n node) title() string {
	for _, c := range n.Nodes {
		if c.XMLName.Local == "title" {
			return c.Text
		}
	}
	return ""
}

// parseSVG decodes svg, failing the test when it is not well-formed XML
// or not one svg element.
func parseSVG(t *testing.T, svg string) node {
	t.Helper()
	var root node
	if err := xml.Unmarshal([]byte(svg), &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("not one well-formed svg element (%v):\n%s", err, svg)
	}
	return root
}

// axis is a drawn plot's frame and value axis: the y of a value, read from
// the labelled ticks.
type axis struct {
	top, bottom float64 // the frame's edges
	lo, hi      float64 // the values at them
	xLabels     []string
}

func axisOf(t *testing.T, root node) axis {
	t.Helper()
	var a axis
	frames := root.all(func(n node) bool { return n.XMLName.Local == "rect" && n.attr("fill") == "none" })
	if len(frames) != 1 {
		t.Fatalf("%d frames, want 1", len(frames))
	}
	a.top = frames[0].num(t, "y")
	a.bottom = a.top + frames[0].num(t, "height")
	ys := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.attr("class") == "y-axis" })
	var ticks []node
	for _, g := range ys {
		ticks = append(ticks, g.all(func(n node) bool { return n.XMLName.Local == "text" })...)
	}
	if len(ticks) < 3 {
		t.Fatalf("%d y ticks, want at least 3", len(ticks))
	}
	parse := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("y tick %q", s)
		}
		return v
	}
	// The first tick is the lowest, on the bottom edge; the last the top.
	a.lo, a.hi = parse(ticks[0].Text), parse(ticks[len(ticks)-1].Text)
	if ticks[0].num(t, "y") != a.bottom || ticks[len(ticks)-1].num(t, "y") != a.top {
		t.Fatalf("the y ticks do not span the frame")
	}
	for _, g := range root.all(func(n node) bool { return n.XMLName.Local == "g" && n.attr("class") == "x-axis" }) {
		for _, x := range g.all(func(n node) bool { return n.XMLName.Local == "text" && n.hasClass("tick") && n.hasClass("x") }) {
			a.xLabels = append(a.xLabels, x.Text)
		}
	}
	return a
}

// y is the pixel row of value v.
func (a axis) y(v float64) float64 { return a.bottom - (a.bottom-a.top)*(v-a.lo)/(a.hi-a.lo) }

// The result of a run of series net on branch at created, with samples/sec
// sps and status st.
func seriesResult(run string, created time.Time, branch string, sps float64, st protocol.Status) *protocol.Result {
	return &protocol.Result{Schema: protocol.SchemaResult, Run: run, Job: run + "-j", RunCreatedAt: created, Pool: "sim", Runner: "sim",
		Status: st, Benchmark: protocol.Benchmark{Model: "net", BatchSize: 4, DataFormat: "bfloat16"},
		Source:       protocol.Source{Commit: "abcdef0123", Branch: branch},
		Measurements: protocol.Measurements{SamplesPerSec: sps}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
}

func seriesOf(t *testing.T, rs []*protocol.Result) []gate.SeriesPoint {
	t.Helper()
	rule, err := gate.GateConfig{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return gate.SeriesPoints(rs, gate.SeriesOf(rs[0]), rule)
}

var seriesT0 = time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)

// pointsOf is the run markers of a series chart (the shapes in its links).
func pointsOf(root node) []node {
	return root.all(func(n node) bool { return n.hasClass("pt") })
}

// The series chart's value axis is fitted to the passed values and the
// gate's noise band: not from 0, never stretched by a figure of a run that
// did not pass. A run that did not pass and has no figure is a cross on
// the bottom edge; one with a figure beyond the axis a triangle on that
// edge.
func TestSeriesSVGAxisFitsPassedValuesAndBand(t *testing.T) {
	t.Parallel()
	var rs []*protocol.Result
	for i := range 12 {
		// ±4% of noise on main makes a band wider than the last values.
		v := 1000 * (1 + 0.04*float64((i*5)%3-1))
		if i >= 9 {
			v = 1000
		}
		rs = append(rs, seriesResult(fmt.Sprintf("m%02d", i), seriesT0.Add(time.Duration(i)*time.Hour), "main", v, protocol.StatusPassed))
	}
	rs = append(rs,
		seriesResult("failed-unmeasured", seriesT0.Add(12*time.Hour), "main", 0, protocol.StatusFailed),
		seriesResult("failed-fast", seriesT0.Add(13*time.Hour), "main", 9000, protocol.StatusFailed),
		seriesResult("timeout-slow", seriesT0.Add(14*time.Hour), "main", 10, protocol.StatusTimeout),
		seriesResult("m-regressed", seriesT0.Add(15*time.Hour), "main", 850, protocol.StatusPassed))
	pts := seriesOf(t, rs)
	root := parseSVG(t, string(chart.SeriesSVG(pts, chart.SeriesOptions{ID: "chart", Branch: "main", RunLink: "/runs/"})))
	a := axisOf(t, root)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		if p.Result.Status == protocol.StatusPassed {
			lo, hi = min(lo, p.Value()), max(hi, p.Value())
		}
		if j := p.Judgement; j.HasBaseline {
			lo, hi = min(lo, j.Baseline-j.Band), max(hi, j.Baseline+j.Band)
		}
	}
	if a.lo > lo || a.hi < hi {
		t.Errorf("axis %g to %g does not cover the passed values and the band, %g to %g", a.lo, a.hi, lo, hi)
	}
	if a.lo <= 0 || a.hi-a.lo > 3*(hi-lo) {
		t.Errorf("axis %g to %g is not fitted to the passed values and the band, %g to %g", a.lo, a.hi, lo, hi)
	}
	band := root.all(func(n node) bool { return n.XMLName.Local == "polygon" && n.hasClass("band") })
	if len(band) != 1 || len(strings.Fields(band[0].attr("points"))) < 2*10 {
		t.Fatalf("band %v: want one polygon around the runs with a baseline", band)
	}
	for _, xy := range strings.Fields(band[0].attr("points")) {
		y, _ := strconv.ParseFloat(xy[strings.Index(xy, ",")+1:], 64)
		if y < a.top || y > a.bottom {
			t.Errorf("band point %s outside the frame (%g to %g)", xy, a.top, a.bottom)
		}
	}
	byRun := map[string]node{}
	for _, a := range root.all(func(n node) bool { return n.XMLName.Local == "a" && n.hasClass("point") }) {
		if len(a.Nodes) != 1 {
			t.Fatalf("link %s holds %d shapes, want 1", a.attr("href"), len(a.Nodes))
		}
		byRun[strings.TrimPrefix(a.attr("href"), "/runs/")] = a.Nodes[0]
	}
	if len(byRun) != len(pts) {
		t.Fatalf("%d linked points, want one per run (%d)", len(byRun), len(pts))
	}
	unmeasured := byRun["failed-unmeasured"]
	if !unmeasured.hasClass("failed") || unmeasured.hasClass("off-scale") || crossCentre(t, unmeasured) != a.bottom {
		t.Errorf("the unmeasured failure %v: want a cross on the bottom edge (%g)", unmeasured, a.bottom)
	}
	if fast := byRun["failed-fast"]; !fast.hasClass("off-scale") || !strings.Contains(fast.attr("d"), fmt.Sprintf(" %.1fL", a.top-1)) {
		t.Errorf("the 9× failure %v: want a triangle on the top edge (%g)", fast, a.top)
	}
	if slow := byRun["timeout-slow"]; !slow.hasClass("off-scale") || !strings.Contains(slow.attr("d"), fmt.Sprintf(" %.1fL", a.bottom+1)) {
		t.Errorf("the slow timeout %v: want a triangle on the bottom edge (%g)", slow, a.bottom)
	}
	reg := byRun["m-regressed"]
	if !reg.hasClass("regression") || math.Abs(reg.num(t, "cy")-a.y(850)) > 0.1 || reg.num(t, "r") <= byRun["m00"].num(t, "r") {
		t.Errorf("the regressed run %v: want a larger dot of class regression at 850 (y %.1f)", reg, a.y(850))
	}
}

// crossCentre is the y of an ✕ path "Mx y-d L… M… L…".
func crossCentre(t *testing.T, n node) float64 {
	t.Helper()
	var x1, y1, x2, y2 float64
	if _, err := fmt.Sscanf(n.attr("d"), "M%g %gL%g %g", &x1, &y1, &x2, &y2); err != nil {
		t.Fatalf("cross %q: %v", n.attr("d"), err)
	}
	return (y1 + y2) / 2
}

// The series line joins the passed runs of the baseline branch only; runs
// of other branches are points of their own (class branch), and a run
// that did not pass is on no line.
func TestSeriesSVGLineIsTheBaselineBranch(t *testing.T) {
	t.Parallel()
	var rs []*protocol.Result
	for i := range 9 {
		branch := "main"
		if i%3 == 2 {
			branch = "feature/x"
		}
		rs = append(rs, seriesResult(fmt.Sprintf("r%d", i), seriesT0.Add(time.Duration(i)*time.Hour), branch, 1000+float64(i), protocol.StatusPassed))
	}
	rs = append(rs, seriesResult("r9", seriesT0.Add(9*time.Hour), "main", 0, protocol.StatusFailed))
	root := parseSVG(t, string(chart.SeriesSVG(seriesOf(t, rs), chart.SeriesOptions{Branch: "main"})))
	lines := root.all(func(n node) bool { return n.XMLName.Local == "polyline" && n.hasClass("trend") })
	if len(lines) != 1 {
		t.Fatalf("%d trend lines, want 1", len(lines))
	}
	if n := len(strings.Fields(lines[0].attr("points"))); n != 6 {
		t.Errorf("the line joins %d points, want the 6 passed on main: %s", n, lines[0].attr("points"))
	}
	if got := lines[0].title(); got != "passed results on main" {
		t.Errorf("the line's title %q", got)
	}
	var branch, failed int
	for _, p := range pointsOf(root) {
		switch {
		case p.hasClass("failed"):
			failed++
		case p.hasClass("branch"):
			branch++
		}
	}
	if branch != 3 || failed != 1 {
		t.Errorf("%d points off the baseline branch and %d failed, want 3 and 1", branch, failed)
	}
}

// The time axis' labels differ from each other whatever the series' span:
// seconds apart, minutes, hours, days, a year, a single run; the day is in
// the axis' caption when the span is within one.
func TestSeriesSVGTimeLabelsDiffer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		step    time.Duration
		n       int
		caption string
	}{
		{"20s apart", 20 * time.Second, 10, "run created (UTC, 2026-06-01)"},
		{"a minute apart", time.Minute, 4, "run created (UTC, 2026-06-01)"},
		{"hours apart", time.Hour, 10, "run created (UTC, 2026-06-01)"},
		{"crossing midnight", 2 * time.Hour, 12, "run created (UTC)"},
		{"days apart", 14 * time.Hour, 6, "run created (UTC)"},
		{"weeks apart", 7 * 24 * time.Hour, 50, "run created (UTC)"},
		{"one run", 0, 1, "run created (UTC, 2026-06-01)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var rs []*protocol.Result
			for i := range c.n {
				rs = append(rs, seriesResult(fmt.Sprintf("r%02d", i), seriesT0.Add(time.Duration(i)*c.step), "main", 1000, protocol.StatusPassed))
			}
			svg := string(chart.SeriesSVG(seriesOf(t, rs), chart.SeriesOptions{}))
			labels := axisOf(t, parseSVG(t, svg)).xLabels
			seen := map[string]bool{}
			for _, l := range labels {
				if seen[l] {
					t.Errorf("labels repeat %q: %q", l, labels)
				}
				seen[l] = true
			}
			if len(labels) < 3 {
				t.Errorf("labels %q: want at least 3", labels)
			}
			if !strings.Contains(svg, ">"+c.caption+"<") {
				t.Errorf("no caption %q", c.caption)
			}
		})
	}
}

// What a series chart prints comes from results: a hostile branch, run id
// or hover text is escaped, the chart stays well-formed and its links stay
// links to runs.
func TestSeriesSVGEscapes(t *testing.T) {
	t.Parallel()
	const evil = `"><script>alert(1)</script><a href="javascript:x">&amp;`
	var rs []*protocol.Result
	for i := range 6 {
		r := seriesResult(fmt.Sprintf("r%d", i), seriesT0.Add(time.Duration(i)*time.Hour), "main", 1000+float64(i), protocol.StatusPassed)
		rs = append(rs, r)
	}
	rs[5].Run = `javascript:alert(1)//"<>&`
	rs[4].Source.Branch = evil
	title := func(p gate.SeriesPoint) string { return p.Result.Source.Branch + " " + p.Result.Run }
	svg := string(chart.SeriesSVG(seriesOf(t, rs), chart.SeriesOptions{ID: `x"y`, Branch: evil, Title: title, RunLink: "/runs/"}))
	root := parseSVG(t, svg)
	if strings.Contains(svg, "<script") || strings.Contains(svg, `href="javascript`) {
		t.Fatalf("hostile text written unescaped:\n%s", svg)
	}
	if root.attr("id") != `x"y` {
		t.Errorf("id %q", root.attr("id"))
	}
	var titles []string
	for _, a := range root.all(func(n node) bool { return n.XMLName.Local == "a" }) {
		if !strings.HasPrefix(a.attr("href"), "/runs/") {
			t.Errorf("a point links to %q, not a run", a.attr("href"))
		}
		titles = append(titles, a.Nodes[0].title())
	}
	if !slices.Contains(titles, evil+" r4") || !slices.Contains(titles, `main javascript:alert(1)//"<>&`) {
		t.Errorf("titles %q do not read as given", titles)
	}
	if got := chart.SeriesSVG(nil, chart.SeriesOptions{}); got != "" {
		t.Errorf("no points: %q, want nothing", got)
	}
}
