package ui_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/benchfleet/benchfleet/producer/chart"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

// overlapsJS lists the pairs of elements matching a selector whose boxes
// (as the browser drew them) overlap, and the elements whose right edge
// is beyond their svg's width.
const overlapsJS = `(sel => {
  const els = Array.from(document.querySelectorAll(sel));
  const boxes = els.map(e => { const b = e.getBBox(); return {t: e.textContent, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height, w: e.ownerSVGElement.viewBox.baseVal.width}; });
  const out = [];
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    if (a.x0 < 0 || a.x1 > a.w) out.push('outside the picture: ' + a.t + ' spans ' + a.x0.toFixed(0) + ' to ' + a.x1.toFixed(0) + ' of ' + a.w);
    for (let j = i + 1; j < boxes.length; j++) {
      const b = boxes[j];
      if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) out.push('overlap: ' + a.t + ' / ' + b.t);
    }
  }
  return [String(els.length), ...out];
})`

// checkDrawn fails the test when texts matching sel overlap or leave the
// picture as the browser drew them, or when fewer than min are drawn.
func checkDrawn(b *drive, what, sel string, min int) {
	b.t.Helper()
	res := evalJS[[]string](b, overlapsJS+`(`+fmt.Sprintf("%q", sel)+`)`)
	if n, _ := strconv.Atoi(res[0]); n < min {
		b.t.Errorf("%s: %d texts %s drawn, want at least %d", what, n, sel, min)
	}
	for _, p := range res[1:] {
		b.t.Errorf("%s: %s", what, p)
	}
}

// The pictures as a browser draws them, with the series (eight
// main runs at 1000, a step to 700, two more at 700, a bisect's run off
// main and a pull request's): the trend SVG and the report (their legend
// labels whole and within the picture, their labels never overlapping),
// the series page (its axis from 0 up at least, its labels apart) and the
// home page (the open regression listed). The screenshots go to
// $BENCHFLEET_UI_SHOTS (else a temporary folder): look at them.
func TestBrowserPictures(t *testing.T) {
	ctx, _ := browser(t)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ser := plantStep(t, store)
	// A sim series of the same model and pool: the trend names both
	// series with their runner and test, the forge one at length.
	j := protoJob(t)
	now := time.Now().UTC()
	for i := range 11 {
		plantResult(t, store, j, fmt.Sprintf("ci-%d", i), now.Add(-14*time.Hour+time.Duration(i)*time.Hour).Truncate(time.Minute), "main", 2000+float64(i%3))
	}
	hs := serve(t, uiOf(t, store))
	dir := shots(t)
	b := &drive{t: t, ctx: ctx}

	rs, _, err := index.Query(t.Context(), store, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var svg, rep bytes.Buffer
	if err := chart.WriteTrendSVG(&svg, rs, chart.TrendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := chart.WriteReportHTML(&rep, rs, chart.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	trendFile, repFile := filepath.Join(dir, "trend.svg"), filepath.Join(dir, "report.html")
	if err := os.WriteFile(trendFile, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(repFile, rep.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	b.do(chromedp.EmulateViewport(1000, 600), chromedp.Navigate("file://"+trendFile), chromedp.WaitReady("svg"))
	checkDrawn(b, "trend", "g.legend text.label", 2)
	checkDrawn(b, "trend", "text.tag", 2)
	checkDrawn(b, "trend key", "g.key text.label", 3)
	b.shot(dir, "trend.png")

	b.do(chromedp.EmulateViewport(1200, 900), chromedp.Navigate("file://"+repFile), chromedp.WaitReady("body"))
	checkDrawn(b, "report", "g.legend text.label", 2)
	checkDrawn(b, "report", "text.tag", 2)
	if open := textOf(b, "ul.open-regressions"); !strings.Contains(open, "open regression since commit "+stepCommit(8)[:12]) {
		t.Errorf("the report's open regressions: %q", open)
	}
	b.shot(dir, "report.png")

	b.do(chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#open-regressions"))
	if open := textOf(b, "#open-regressions"); !strings.Contains(open, stepCommit(8)[:12]) || !strings.Contains(open, "-30.0%") {
		t.Errorf("home's open regressions: %q", open)
	}
	b.shot(dir, "home.png")
	b.do(chromedp.Click(`#open-regressions tr.open a`, chromedp.NodeVisible), chromedp.WaitVisible("#chart"))
	checkDrawn(b, "series page", "#chart text.tag", 1)
	if lo := evalJS[string](b, `document.querySelector('#chart g.y-axis text').textContent`); strings.HasPrefix(lo, "-") {
		t.Errorf("the series page's y axis starts at %s", lo)
	}
	b.shot(dir, "series.png")

	// Accepted: home folds it under the accepted ones, with its reason;
	// the series page's box says who accepted it and why.
	if err := gate.Accept(t.Context(), store, gate.Acceptance{Series: ser, Commit: stepCommit(8), Reason: "new firmware: slower, and correct",
		By: "alice@lab", At: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	hs = serve(t, uiOf(t, store))
	b.do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#open-regressions details.accepted"), chromedp.Click("#open-regressions details.accepted summary", chromedp.NodeVisible))
	if acc := textOf(b, "#open-regressions details.accepted"); !strings.Contains(acc, "new firmware: slower, and correct") {
		t.Errorf("home's accepted regressions: %q", acc)
	}
	b.shot(dir, "home-accepted.png")
	b.do(chromedp.Click(`#open-regressions tr.accepted a`, chromedp.NodeVisible), chromedp.WaitVisible("#chart"))
	if box := textOf(b, ".regression-box.accepted"); !strings.Contains(box, "accepted by alice@lab") {
		t.Errorf("the series page's box: %q", box)
	}
	b.shot(dir, "series-accepted.png")
}

// protoJob is a sim job of model resnet50 on pool n150 (the step series'
// model and pool, another runner).
func protoJob(t *testing.T) *protocol.Job {
	t.Helper()
	j := &protocol.Job{Pool: "n150", Runner: "sim", Benchmark: protocol.Benchmark{Model: "resnet50", BatchSize: 8, LoopCount: 10, WarmupCount: 10, DataFormat: "bfloat16"}}
	j.Normalize()
	return j
}
