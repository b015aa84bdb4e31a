package producer_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer"
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
				if a.Name.Local == "class" && a.Value == "failed" {
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
	for _, m := range producer.Metrics {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := producer.WriteTrendSVG(&b, trendResults(), producer.TrendOptions{Metric: m}); err != nil {
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
	if err := producer.WriteTrendSVG(io.Discard, nil, producer.TrendOptions{}); err == nil {
		t.Error("no results: want an error")
	}
	if err := producer.WriteTrendSVG(io.Discard, trendResults(), producer.TrendOptions{Metric: "nope"}); err == nil {
		t.Error("unknown metric: want an error")
	}
	// One result, and only failed ones: still a well-formed plot.
	one := trendResults()[:1]
	failed := trendResults()[3:4]
	for _, rs := range [][]*protocol.Result{one, failed} {
		var b bytes.Buffer
		if err := producer.WriteTrendSVG(&b, rs, producer.TrendOptions{}); err != nil {
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
	rows := producer.ReportRows(rs)
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
	if err := producer.WriteReportHTML(&b, rs, producer.ReportOptions{Query: "model <x>"}); err != nil {
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
	if n := strings.Count(page, "<tr class="); n != 2 {
		t.Errorf("%d table rows, want 2", n)
	}
}
