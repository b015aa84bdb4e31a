package chart_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// stepTest is the upstream harness's test of the step series: its name
// makes the series' label long (a sim series of the same model and pool
// makes the trend add runner and test to it).
const stepTest = "forge/test/benchmark/test_vision.py::test_resnet50"

// stepCommit is the full commit of the i-th commit of the step series.
func stepCommit(i int) string { return fmt.Sprintf("%02x%038x", 0xa0+i, i) }

// stepResults is the series the issue tells of: eight main runs at 1000
// samples/sec, a commit at 700 (the step, commit 8), two more at 700; a
// bisect run off main (no branch) between the last good and the bad
// commit, and a pull request's run on feature/x. A sim series of the same
// model and pool runs beside it at 2000 throughout.
func stepResults() []*protocol.Result {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var rs []*protocol.Result
	add := func(run, branch, commit string, at time.Duration, sps float64, runner, test string, labels map[string]string) {
		rs = append(rs, &protocol.Result{Schema: protocol.SchemaResult, Run: run, Job: run + "-" + runner, RunCreatedAt: t0.Add(at),
			Pool: "n150", Runner: runner, Status: protocol.StatusPassed,
			Benchmark:    protocol.Benchmark{Test: test, Model: "resnet50", BatchSize: 8, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "https://example.com/tt-forge-onnx", Commit: commit, Branch: branch},
			Measurements: protocol.Measurements{SamplesPerSec: sps}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}, Labels: labels})
	}
	main := []float64{1000, 1004, 997, 1006, 995, 1002, 998, 1000, 700, 703, 697}
	for i, v := range main {
		run, at := fmt.Sprintf("ci-%d", i), time.Duration(i)*time.Hour
		add(run, "main", stepCommit(i), at, v, "forge", stepTest, nil)
		add(run, "main", stepCommit(i), at, 2000+float64(i%3), "sim", "", nil)
	}
	add("bisect-a7", "", stepCommit(7)[:39]+"f", 10*time.Hour+20*time.Minute, 850, "forge", stepTest, map[string]string{"bisect": "true"})
	add("pr-42", "feature/x", stepCommit(20), 10*time.Hour+40*time.Minute, 646, "forge", stepTest, nil)
	return rs
}

// The report lists the series' open regression since the 700 commit two
// commits after it (when its latest run on main passes the gate): the
// commit and run, the levels and change, the runs since, the last good
// commit and the bisect command; an accepted one is listed as accepted,
// with who accepted it and why, and not as open.
func TestReportListsOpenRegression(t *testing.T) {
	t.Parallel()
	rs := stepResults()
	var b bytes.Buffer
	if err := chart.WriteReportHTML(&b, rs, chart.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	section := page[strings.Index(page, "<h2>Regressions</h2>"):strings.Index(page, "<h2>Samples/sec over time</h2>")]
	bad, good := stepCommit(8), stepCommit(7)
	for _, want := range []string{
		`<ul class="open-regressions">`,
		"<b>resnet50/n150/bs8/bfloat16/forge/" + stepTest + "</b>: open regression since commit <code title=\"" + bad + "\">" + bad[:12] + "</code> (run <code>ci-8</code>",
		"1000.0 → 700.0 samples/sec", "-30.0%", "3 runs since", "last good <code title=\"" + good + "\">" + good[:12] + "</code> (run <code>ci-7</code>)",
		"benchfleet results bisect --model resnet50 --batch-size 8 --data-format bfloat16 --pool n150 --runner forge --test " + gateQuote(stepTest) + " --good " + good + " --bad " + bad,
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the report's regressions do not say %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "None") || strings.Contains(section, "accepted-regressions") {
		t.Errorf("the report's regressions say none, or list an accepted one:\n%s", section)
	}
	if n := strings.Count(section, `<li class="open">`); n != 1 {
		t.Errorf("%d open regressions listed, want 1 (the sim series never stepped)", n)
	}

	accepted := gate.Acceptance{Series: gate.SeriesOf(rs[0]), Commit: bad, Reason: "new firmware: slower <but> correct", By: "alice@lab",
		At: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	b.Reset()
	if err := chart.WriteReportHTML(&b, rs, chart.ReportOptions{Acceptances: []gate.Acceptance{accepted}}); err != nil {
		t.Fatal(err)
	}
	page = b.String()
	section = page[strings.Index(page, "<h2>Regressions</h2>"):strings.Index(page, "<h2>Samples/sec over time</h2>")]
	for _, want := range []string{`<ul class="accepted-regressions">`, "accepted regression since commit <code title=\"" + bad + "\">",
		"accepted by alice@lab on 2026-12-02: <q class=\"reason\">new firmware: slower &lt;but&gt; correct</q>"} {
		if !strings.Contains(section, want) {
			t.Errorf("the report with the acceptance does not say %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, `<li class="open">`) {
		t.Errorf("the accepted regression is still listed as open:\n%s", section)
	}
}

// gateQuote is how the bisect command quotes a word for a shell.
func gateQuote(s string) string { return gate.ShellQuote(s) }

// trendDoc is a trend SVG decoded, and its width.
func trendDoc(t *testing.T, rs []*protocol.Result, o chart.TrendOptions) (node, float64) {
	t.Helper()
	var b bytes.Buffer
	if err := chart.WriteTrendSVG(&b, rs, o); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	root := parseSVG(t, svg[strings.Index(svg, "<svg"):])
	return root, root.num(t, "width")
}

// textOf is the text of a text element: its own, or its lines' (tspans)
// joined.
func textOf(n node) string {
	var s strings.Builder
	s.WriteString(n.Text)
	for _, c := range n.Nodes {
		if c.XMLName.Local == "tspan" {
			s.WriteString(c.Text)
		}
	}
	return s.String()
}

// The legend names each series in full, however long its name, with the
// number of its runs, and every line of it lies within the picture (its
// width estimated wide, as a browser's DejaVu Sans draws it: measured in a
// real browser by internal/ui's TestBrowserPictures), also when the
// picture is as narrow as it may be.
func TestTrendLegendNamesSeriesInFull(t *testing.T) {
	t.Parallel()
	for _, width := range []int{960, 480} {
		root, w := trendDoc(t, stepResults(), chart.TrendOptions{Width: width})
		var labels []string
		for _, g := range root.all(func(n node) bool { return n.hasClass("legend") || n.hasClass("key") }) {
			for _, txt := range g.all(func(n node) bool { return n.XMLName.Local == "text" && n.hasClass("label") }) {
				if g.hasClass("legend") {
					labels = append(labels, textOf(txt))
				}
				lines := txt.all(func(n node) bool { return n.XMLName.Local == "tspan" })
				if len(lines) == 0 {
					lines = []node{txt}
				}
				for _, l := range lines {
					x, lw := txt.num(t, "x"), l.num(t, "data-w")
					if x < 0 || x+lw > w {
						t.Errorf("width %d: legend or key text %q spans %.0f to %.0f, outside the picture (0 to %.0f)", width, textOf(l), x, x+lw, w)
					}
				}
			}
		}
		want := []string{"n150/bs8/bfloat16/forge/" + stepTest + " (13 runs)", "n150/bs8/bfloat16/sim (11 runs)"}
		if strings.Join(labels, "\n") != strings.Join(want, "\n") {
			t.Errorf("width %d: legend labels %q, want %q", width, labels, want)
		}
	}
}

// tagBox is the box a tag's text keeps free (data-box: its estimated
// extent, wide), checked to hold the text where it is anchored.
func tagBox(t *testing.T, n node) [4]float64 {
	t.Helper()
	var b [4]float64
	if _, err := fmt.Sscan(n.attr("data-box"), &b[0], &b[1], &b[2], &b[3]); err != nil {
		t.Fatalf("tag %q: data-box %q: %v", n.Text, n.attr("data-box"), err)
	}
	x, y := n.num(t, "x"), n.num(t, "y")
	var in bool
	switch n.attr("text-anchor") {
	case "end":
		in = x <= b[2] && x > b[0]
	case "middle":
		in = x > b[0] && x < b[2]
	default:
		in = x >= b[0] && x < b[2]
	}
	if !in || y < b[1] || y > b[3] {
		t.Errorf("tag %q anchored %s at %v,%v outside its box %v", n.Text, n.attr("text-anchor"), x, y, b)
	}
	return b
}

// The change labels of regressions never overlap, also when several
// series of a panel drop at the same run to nearly the same level, and
// runs of one series one after the other are regressions (−53.0% and
// −45.5% in the issue); each has its label.
func TestTrendChangeLabelsDoNotOverlap(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var rs []*protocol.Result
	for pi, pool := range []string{"n150", "n300", "p150", "p300"} {
		for i := range 12 {
			v := 1000 + float64(i%3)
			switch {
			case i == 10:
				v = 470 + 3*float64(pi) // −53.0% and so on
			case i == 11 && pi == 0:
				v = 545 // against the history before it: −45.5%
			case i == 11:
				v = 480
			}
			rs = append(rs, &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("r%d", i), Job: fmt.Sprintf("j%d-%s", i, pool),
				RunCreatedAt: t0.Add(time.Duration(i) * time.Hour), Pool: pool, Runner: "forge", Status: protocol.StatusPassed,
				Benchmark:    protocol.Benchmark{Model: "resnet50", BatchSize: 8, DataFormat: "bfloat16"},
				Source:       protocol.Source{Commit: fmt.Sprintf("%040x", i), Branch: "main"},
				Measurements: protocol.Measurements{SamplesPerSec: v}})
		}
	}
	root, _ := trendDoc(t, rs, chart.TrendOptions{})
	tags := root.all(func(n node) bool { return n.XMLName.Local == "text" && n.hasClass("tag") })
	if len(tags) < 4 {
		t.Fatalf("%d change labels, want one per series' step (4) at least", len(tags))
	}
	for i := range tags {
		a := tagBox(t, tags[i])
		for _, o := range tags[i+1:] {
			b := tagBox(t, o)
			if a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3] {
				t.Errorf("labels %q at %v and %q at %v overlap", tags[i].Text, a, o.Text, b)
			}
		}
	}
}

// The trend's line joins only the runs on the baseline branch: a bisect's
// run (no branch) and a pull request's are marks of their own, unjoined.
// The segments of the history show as levels (two for the series that
// stepped), and the first run of the open regression says so with its
// commit.
func TestTrendLineSegmentsAndOpenRegression(t *testing.T) {
	t.Parallel()
	root, _ := trendDoc(t, stepResults(), chart.TrendOptions{})
	series := root.all(func(n node) bool { return n.hasClass("series") && strings.Contains(n.attr("data-series"), "forge") })
	if len(series) != 1 {
		t.Fatalf("%d forge series drawn, want 1", len(series))
	}
	lines := series[0].all(func(n node) bool { return n.XMLName.Local == "polyline" })
	if len(lines) != 1 || len(strings.Fields(lines[0].attr("points"))) != 11 {
		t.Errorf("the forge line joins %v, want the 11 runs on main", lines)
	}
	if off := series[0].all(func(n node) bool { return n.hasClass("off") }); len(off) != 2 {
		t.Errorf("%d runs off main drawn apart, want 2 (the bisect's and the pull request's)", len(off))
	}
	segs := root.all(func(n node) bool { return n.XMLName.Local == "line" && n.hasClass("segment") })
	if len(segs) != 3 { // the forge series' two levels, the sim series' one
		t.Errorf("%d segment levels drawn, want 3", len(segs))
	}
	var open []string
	for _, n := range root.all(func(n node) bool { return n.hasClass("tag") && n.hasClass("open") }) {
		open = append(open, n.Text)
	}
	if want := "-30.0% · open since " + stepCommit(8)[:12]; len(open) != 1 || open[0] != want {
		t.Errorf("open regression labels %q, want [%q]", open, want)
	}
}

// noisyResults is a series on main whose runs swing between 100 and 1900
// samples/sec around 1000: the gate's noise band around that level
// reaches far below zero.
func noisyResults() []*protocol.Result {
	var rs []*protocol.Result
	for i, v := range []float64{100, 1900, 300, 1700, 1000, 600, 1400, 800, 1200, 500, 1500, 900} {
		rs = append(rs, seriesResult(fmt.Sprintf("noisy-%02d", i), seriesT0.Add(time.Duration(i)*time.Hour), "main", v, protocol.StatusPassed))
	}
	return rs
}

// The series chart's value axis never goes below zero, however wide the
// noise band, and the band is drawn within the axis.
func TestSeriesSVGNeverBelowZero(t *testing.T) {
	t.Parallel()
	pts := seriesOf(t, noisyResults())
	if j := pts[len(pts)-1].Judgement; !(j.Baseline-j.Band < 0) {
		t.Fatalf("the last run's band %v ± %v does not reach below zero: no test", j.Baseline, j.Band)
	}
	root := parseSVG(t, string(chart.SeriesSVG(pts, chart.SeriesOptions{})))
	a := axisOf(t, root)
	if a.lo < 0 {
		t.Errorf("the y axis runs from %v, below zero", a.lo)
	}
	bands := root.all(func(n node) bool { return n.hasClass("band") })
	if len(bands) == 0 {
		t.Fatal("no noise band drawn")
	}
	for _, band := range bands {
		for _, pt := range strings.Fields(band.attr("points")) {
			_, ys, _ := strings.Cut(pt, ",")
			y, err := strconv.ParseFloat(ys, 64)
			if err != nil {
				t.Fatal(err)
			}
			if y > a.bottom+0.05 || y < a.top-0.05 {
				t.Errorf("the band reaches y %v, outside the axis (%v to %v)", y, a.top, a.bottom)
			}
		}
	}
}

// goName matches what a page must never show: a Go identifier of one of
// our packages (the report's header once read producer.Series) or a
// formatting verb's complaint.
var goName = regexp.MustCompile(`\b(producer|gate|chart|protocol|runstate|storage|index)\.[A-Z][A-Za-z]*|%!|map\[|&\{`)

// The report's table heads its columns with words, Series first, and no
// text of the page is a Go name.
func TestReportSpeaksWords(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := chart.WriteReportHTML(&b, stepResults(), chart.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "<thead><tr><th>Series</th><th>Samples/sec</th>") {
		t.Errorf("the table's header does not begin with Series:\n%s", page[strings.Index(page, "<thead>"):strings.Index(page, "</thead>")])
	}
	if m := goName.FindAllString(page, -1); m != nil {
		t.Errorf("the report shows Go names %q", m)
	}
}
