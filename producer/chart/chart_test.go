package chart_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
)

// trendResults is three runs of two series, one with a model name that
// needs escaping, and one failed result.
func trendResults() []*protocol.Result {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var rs []*protocol.Result
	for i, rate := range []float64{100, 104, 90} {
		for _, model := range []string{"resnet50", "evil<&>\"model"} {
			r := &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("r%d", i),
				Job: fmt.Sprintf("j%d-%d", i, len(model)), RunCreatedAt: t0.Add(time.Duration(i) * 24 * time.Hour),
				Pool: "n150", Runner: "forge", Status: protocol.StatusPassed,
				Benchmark:    protocol.Benchmark{Model: model, BatchSize: 8, DataFormat: "bfloat16"},
				Source:       protocol.Source{Commit: fmt.Sprintf("abcdef%02d", i), Branch: "main"},
				Measurements: protocol.Measurements{SamplesPerSec: rate, IterationMS: protocol.IterationMS{P50: 1000 / rate}},
				PCC:          protocol.PCC{Value: 0.9991, Min: 0.99, Passed: true}}
			rs = append(rs, r)
		}
	}
	rs[3].Status, rs[3].Measurements = protocol.StatusFailed, protocol.Measurements{}
	return rs
}

// svgDoc decodes an SVG with encoding/xml, failing the test when it is not
// well-formed, and returns element counts and all character data.
func svgDoc(t *testing.T, data []byte) (map[string]int, string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	elems := map[string]int{}
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elems[tok.Name.Local]++
			for _, a := range tok.Attr {
				if a.Name.Local == "class" && slices.Contains(strings.Fields(a.Value), "failed") {
					elems["failed"]++
				}
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	return elems, text.String()
}

func TestWriteTrendSVG(t *testing.T) {
	t.Parallel()
	for _, m := range chart.Metrics {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := chart.WriteTrendSVG(&b, trendResults(), chart.TrendOptions{Metric: m}); err != nil {
				t.Fatal(err)
			}
			elems, text := svgDoc(t, b.Bytes())
			if elems["svg"] != 1 || elems["polyline"] != 2 {
				t.Errorf("%d svg and %d polylines, want 1 and one per series (2)", elems["svg"], elems["polyline"])
			}
			if elems["circle"] < 5 || elems["failed"] != 1 {
				t.Errorf("%d circles and %d failed crosses, want at least 5 (points and legend) and 1", elems["circle"], elems["failed"])
			}
			if !strings.Contains(text, `evil<&>"model/n150/bs8/bfloat16`) {
				t.Errorf("legend misses the escaped model name; text:\n%s", text)
			}
			if strings.Contains(b.String(), "evil<&>") {
				t.Error("model name written unescaped")
			}
			for _, want := range []string{"2026-11-01", "2026-11-03", m.Label()} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q among the labels", want)
				}
			}
		})
	}
}

func TestWriteTrendSVGEdges(t *testing.T) {
	t.Parallel()
	if err := chart.WriteTrendSVG(io.Discard, nil, chart.TrendOptions{}); err == nil {
		t.Error("no results: want an error")
	}
	if err := chart.WriteTrendSVG(io.Discard, trendResults(), chart.TrendOptions{Metric: "nope"}); err == nil {
		t.Error("unknown metric: want an error")
	}
	// One result, and only failed ones: still a well-formed plot.
	one := trendResults()[:1]
	failed := trendResults()[3:4]
	for _, rs := range [][]*protocol.Result{one, failed} {
		var b bytes.Buffer
		if err := chart.WriteTrendSVG(&b, rs, chart.TrendOptions{}); err != nil {
			t.Fatal(err)
		}
		if elems, _ := svgDoc(t, b.Bytes()); elems["polyline"] != 1 {
			t.Errorf("%d polylines, want 1", elems["polyline"])
		}
	}
}

func TestReportRowsAndHTML(t *testing.T) {
	t.Parallel()
	rs := trendResults()
	rows := chart.ReportRows(rs)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per series (2)", len(rows))
	}
	for _, r := range rows {
		if r.Latest.Run != "r2" {
			t.Errorf("%s: latest is run %s, want r2", r.Name, r.Latest.Run)
		}
	}
	// evil: r1 failed, so the change is against r0 (100 → 90); resnet50:
	// against r1 (104 → 90).
	if c := rows[0].Change; rows[0].Series.Model != "evil<&>\"model" || c == nil || fmt.Sprintf("%.3f", *c) != "-0.100" {
		t.Errorf("row 0: %+v", rows[0])
	}
	if c := rows[1].Change; c == nil || fmt.Sprintf("%.3f", *c) != "-0.135" {
		t.Errorf("row 1: %+v", rows[1])
	}

	var b bytes.Buffer
	if err := chart.WriteReportHTML(&b, rs, chart.ReportOptions{Query: "model <x>"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<svg", "evil&lt;&amp;&gt;&#34;model/n150/bs8/bfloat16", "model &lt;x&gt;",
		"passed: 5", "failed: 1", "-10.0%", "-13.5%", "abcdef02", "2026-11-01 09:00 to 2026-11-03 09:00"} {
		if !strings.Contains(page, want) {
			t.Errorf("report misses %q", want)
		}
	}
	if strings.Contains(page, "evil<&>") || strings.Contains(page, "<?xml") {
		t.Error("report has an unescaped model name or an XML declaration")
	}
	if n, groups := strings.Count(page, "<tr class="), strings.Count(page, `<tr class="group">`); n-groups != 2 || groups != 2 {
		t.Errorf("%d table rows and %d model headings, want 2 and 2", n-groups, groups)
	}
}

// pictureResults is what a performance engineer looks at: 7 models × 3
// pools (21 series) over 8 runs 40 minutes apart; resnet50/n150 drops 13%
// in the last run, one bert result failed unmeasured and one vit result
// failed with a wrong, 9× fast figure.
func pictureResults() []*protocol.Result {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	models := []string{"bert", "llama3b", "mlp", "resnet18", "resnet50", "vit", "yolov5"}
	base := map[string]float64{"resnet50": 1200, "resnet18": 3400, "mlp": 52000, "bert": 310, "vit": 640, "yolov5": 880, "llama3b": 42}
	var rs []*protocol.Result
	for i := 0; i < 8; i++ {
		for _, m := range models {
			for pi, pool := range []string{"n150", "n300", "p150"} {
				// ±0.5% of deterministic noise.
				rate := base[m] * (1 + 0.3*float64(pi)) * (1 + 0.005*float64((i*7+pi*3)%5-2)/2)
				r := &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("n%d", i), Job: fmt.Sprintf("j%d-%s-%s", i, m, pool),
					RunCreatedAt: t0.Add(time.Duration(i) * 40 * time.Minute), Pool: pool, Runner: "forge", Status: protocol.StatusPassed,
					Benchmark:    protocol.Benchmark{Model: m, BatchSize: 8, DataFormat: "bfloat16"},
					Source:       protocol.Source{Commit: fmt.Sprintf("c0ffee%02d", i), Branch: "main"},
					Measurements: protocol.Measurements{SamplesPerSec: rate}, PCC: protocol.PCC{Value: 0.9991, Min: 0.99, Passed: true}}
				switch {
				case i == 7 && m == "resnet50" && pool == "n150":
					r.Measurements.SamplesPerSec = base[m] * 0.87
				case i == 3 && m == "bert" && pool == "n300":
					r.Status, r.Measurements, r.PCC.Value = protocol.StatusFailed, protocol.Measurements{}, 0
				case i == 5 && m == "vit" && pool == "p150":
					r.Status, r.PCC.Value, r.Measurements.SamplesPerSec = protocol.StatusFailed, 0.41, base[m]*9
				}
				rs = append(rs, r)
			}
		}
	}
	return rs
}

// svgTicks returns the numbers of the y tick labels of each panel, and the
// x tick labels of the first panel.
func svgTicks(t *testing.T, data []byte) (map[string][]float64, []string) {
	t.Helper()
	var doc struct {
		Panels []struct {
			Name string `xml:"data-panel,attr"`
			G    []struct {
				Class string   `xml:"class,attr"`
				Text  []string `xml:"text"`
			} `xml:"g"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	ys := map[string][]float64{}
	var xs []string
	for pi, p := range doc.Panels {
		if p.Name == "" {
			continue
		}
		for _, g := range p.G {
			switch g.Class {
			case "y-axis":
				for _, s := range g.Text {
					var v float64
					if _, err := fmt.Sscan(s, &v); err != nil {
						t.Fatalf("y tick %q", s)
					}
					ys[p.Name] = append(ys[p.Name], v)
				}
			case "x-axis":
				if pi == 0 {
					xs = g.Text
				}
			}
		}
	}
	return ys, xs
}

// The picture reads like a performance engineer's chart:
// one panel per model (not 21 series in one stack and legend), each y axis
// fitted to its passed results (not from 0) so a 13% drop is a step, failed
// points marked but never setting the range, several x ticks over a short
// history, and the gate's regressions flagged — in the SVG and the report,
// where a −0.0% change is not coloured as a loss.
func TestTrendPictureReadsLikeAChart(t *testing.T) {
	t.Parallel()
	rs := pictureResults()
	var b bytes.Buffer
	if err := chart.WriteTrendSVG(&b, rs, chart.TrendOptions{}); err != nil {
		t.Fatal(err)
	}
	svg := b.Bytes()
	elems, _ := svgDoc(t, svg)
	if n := strings.Count(string(svg), `class="panel"`); n != 7 {
		t.Errorf("%d panels, want one per model (7)", n)
	}
	ys, xs := svgTicks(t, svg)
	r50 := ys["resnet50"]
	if len(r50) < 3 || r50[0] <= 0 {
		t.Errorf("resnet50 y ticks %v: want an axis fitted to the data, not from 0", r50)
	}
	// The 13% drop spans well over a tick: lowest point 1044, n150 1200.
	if vit := ys["vit"]; len(vit) == 0 || vit[len(vit)-1] >= 640*9 {
		t.Errorf("vit y ticks %v: the failed 9× figure sets the range", vit)
	}
	if bert := ys["bert"]; len(bert) == 0 || bert[0] <= 0 {
		t.Errorf("bert y ticks %v: the unmeasured failure pulls the axis to 0", bert)
	}
	if len(xs) < 4 {
		t.Errorf("x ticks %v over 4h40m: want at least 4", xs)
	}
	if elems["failed"] != 2 || !strings.Contains(string(svg), "off-scale") {
		t.Errorf("%d failed markers (want 2), off-scale marker present: %v", elems["failed"], strings.Contains(string(svg), "off-scale"))
	}
	if n := strings.Count(string(svg), `class="regression"`); n != 1 {
		t.Errorf("%d regressions flagged, want 1 (resnet50/n150, -13%%)", n)
	}

	// A short history: three runs in eight minutes still get several ticks.
	short := rs[:0:0]
	for _, r := range rs {
		if r.Benchmark.Model == "mlp" && r.Pool == "n150" && r.Run <= "n2" {
			c := *r
			c.RunCreatedAt = c.RunCreatedAt.Add(-time.Duration(c.RunCreatedAt.Sub(rs[0].RunCreatedAt)) * 9 / 10)
			short = append(short, &c)
		}
	}
	b.Reset()
	if err := chart.WriteTrendSVG(&b, short, chart.TrendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, xs := svgTicks(t, b.Bytes()); len(xs) < 3 {
		t.Errorf("short history x ticks %v: want at least 3", xs)
	}

	// The report: the regression is listed and its change coloured; a
	// change inside the noise is not coloured, whatever its sign.
	b.Reset()
	if err := chart.WriteReportHTML(&b, rs, chart.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// The step down is the last run, one attempt with no repeats: not yet
	// a change point (the next run may come straight back), so it is the
	// latest result judged a regression, not an open regression.
	if strings.Contains(page, `<ul class="open-regressions">`) || !strings.Contains(page, `<ul class="regressions">
<li><b>resnet50/n150/bs8/bfloat16</b>:`) {
		t.Errorf("the report does not list the regression (a step down in the last run, unconfirmed: the latest result judged a regression)")
	}
	if n := strings.Count(page, `class="num worse"`); n != 1 {
		t.Errorf("%d changes coloured as worse, want only the regression's", n)
	}
	if strings.Contains(page, `class="num better"`) {
		t.Errorf("a change inside the noise is coloured as better")
	}
}

// A run is one point of the trend: a job and its confirmation repeats are
// drawn and judged as the median of their attempts, and an attempt of a
// run is never in its own baseline.
func TestTrendOnePointPerRun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var rs []*protocol.Result
	add := func(run string, at time.Duration, vs ...float64) {
		for k, v := range vs {
			rs = append(rs, &protocol.Result{Schema: protocol.SchemaResult, Run: run, Job: fmt.Sprintf("%s-%d", run, k),
				RunCreatedAt: t0.Add(at), Pool: "sim", Runner: "sim", Status: protocol.StatusPassed,
				Benchmark:    protocol.Benchmark{Model: "net", BatchSize: 4, DataFormat: "bfloat16"},
				Source:       protocol.Source{Commit: "abcdef01", Branch: "main"},
				Measurements: protocol.Measurements{SamplesPerSec: v}})
		}
	}
	for i := range 5 {
		add(fmt.Sprintf("h%d", i), time.Duration(i)*time.Hour, 100+0.01*float64(i))
	}
	add("cleared", 5*time.Hour, 80, 100, 100.01) // one slow attempt, not reproduced
	var b bytes.Buffer
	if err := chart.WriteTrendSVG(&b, rs, chart.TrendOptions{}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	elems, _ := svgDoc(t, b.Bytes())
	if elems["circle"] < 6 || strings.Count(svg, `r="3.5"`) != 6+1 { // six runs and the key's dot
		t.Errorf("%d dots, want one per run (6) and the key's", strings.Count(svg, `r="3.5"`))
	}
	if strings.Contains(svg, `class="regression"`) {
		t.Error("the cleared run's slow attempt is flagged a regression")
	}
	if !strings.Contains(svg, "median of 3 attempts") {
		t.Error("the cleared run's point does not say it is the median of its attempts")
	}
	rows := chart.ReportRows(rs)
	if len(rows) != 1 || rows[0].Latest.Run != "cleared" || rows[0].Value != 100 || rows[0].Judgement.Verdict != gate.VerdictOK || rows[0].Judgement.N != 5 {
		t.Errorf("report row %+v: want the cleared run at its median 100, ok against 5 runs", rows)
	}
}
