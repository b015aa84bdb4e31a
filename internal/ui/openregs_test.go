package ui_test

import (
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// stepTest is the harness test of the step series.
const stepTest = "forge/test/benchmark/test_vision.py::test_resnet50"

// stepCommit is the full commit of the i-th commit of the step series.
func stepCommit(i int) string { return fmt.Sprintf("%02x%038x", 0xa0+i, i) }

// stepWheels is the build the step series' results ran (a bisect needs
// one).
var stepWheels = []protocol.Wheel{{URL: protocol.BuildKey(strings.Repeat("c", 64), "forge-1.0-py3-none-any.whl"), SHA256: strings.Repeat("c", 64)}}

// plantStep stores the series the issue tells of, in the hours before
// now: eight main runs at 1000 samples/sec, a commit at 700 (commit 8,
// run ci-8), two more at 700; a bisect's run off main (no branch) and a
// pull request's on feature/x. It returns the series.
func plantStep(t *testing.T, store storage.Bucket) gate.Series {
	t.Helper()
	t0 := time.Now().UTC().Add(-14 * time.Hour).Truncate(time.Minute)
	var first *protocol.Result
	put := func(run, branch, commit string, at time.Duration, sps float64, labels map[string]string) {
		r := &protocol.Result{Schema: protocol.SchemaResult, Run: run, Job: protocol.JobID(run, "resnet50"), RunCreatedAt: t0.Add(at),
			Pool: "n150", Runner: "forge", Status: protocol.StatusPassed, Attempt: 1, StartedAt: t0.Add(at), FinishedAt: t0.Add(at + time.Minute),
			Benchmark:    protocol.Benchmark{Test: stepTest, Model: "resnet50", BatchSize: 8, LoopCount: 128, WarmupCount: 32, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "https://example.com/tt-forge-onnx", Commit: commit, Branch: branch, Wheels: stepWheels},
			Measurements: protocol.Measurements{SamplesPerSec: sps}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}, Labels: labels}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r
		}
	}
	for i, v := range []float64{1000, 1004, 997, 1006, 995, 1002, 998, 1000, 700, 703, 697} {
		put(fmt.Sprintf("ci-%d", i), "main", stepCommit(i), time.Duration(i)*time.Hour, v, nil)
	}
	put("bisect-a7", "", stepCommit(7)[:39]+"f", 11*time.Hour, 850, map[string]string{"bisect": "true"})
	put("pr-42", "feature/x", stepCommit(20), 12*time.Hour, 646, nil)
	return gate.SeriesOf(first)
}

// uiOf is a dashboard over store, with a NATS server of its own.
func uiOf(t *testing.T, store storage.Bucket) ui.Config {
	t.Helper()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	return ui.Config{JS: js, Topology: fleettest.Topology(t, js, topologyConfig()), Store: store, Refresh: -1}
}

// sectionOf is the element of page with id, up to the end of its
// section or div.
func sectionOf(page, id string) string {
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	rest := page[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		return rest[:j]
	}
	return rest
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// goName matches what a page must never show: a Go identifier of one of
// our packages or a formatting verb's complaint.
var goName = regexp.MustCompile(`\b(producer|gate|chart|protocol|runstate|storage|index)\.[A-Z][A-Za-z]*|%!|map\[|&\{`)

// plain is markup as its text reads, spaces squeezed.
func plain(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(s, " "))), " ")
}

// Two commits after a step to 700 (their own gate passes: they are at
// the series' new level), the dashboard lists the open regression since
// the 700 commit: the home page among the fleet's, with a link to the
// series page, and the series page above its chart with the levels, the
// runs since, the last good commit and the bisect command. Accepted, it
// is listed as accepted, with who accepted it and why, on both.
func TestDashboardListsOpenRegression(t *testing.T) {
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ser := plantStep(t, store)
	hs := serve(t, uiOf(t, store))
	bad, good := stepCommit(8), stepCommit(7)

	var home string
	fleettest.Eventually(t, 30*time.Second, "the home page's open regressions", func() bool {
		_, body := get(t, hs.URL+"/")
		home = sectionOf(body, "open-regressions")
		return strings.Contains(home, `<tr class="open">`)
	})
	text := plain(home)
	for _, want := range []string{"resnet50/n150/bs8/bfloat16", bad[:12], "1000.0 → 700.0", "-30.0%", good[:12]} {
		if !strings.Contains(text, want) {
			t.Errorf("home's open regressions do not say %q: %s", want, text)
		}
	}
	if n := strings.Count(home, `<tr class="open">`); n != 1 {
		t.Errorf("home lists %d open regressions, want 1", n)
	}
	link := regexp.MustCompile(`<tr class="open"><td><a href="([^"]+)"`).FindStringSubmatch(home)
	if link == nil {
		t.Fatalf("home's open regression links to no series page: %s", home)
	}
	_, page := get(t, hs.URL+html.UnescapeString(link[1]))
	box := plain(page[strings.Index(page, `<div class="regression-box open">`):strings.Index(page, `<svg`)])
	for _, want := range []string{"Open regression since commit " + bad[:12], "(run ci-8,", "1000.0 → 700.0 samples/s", "-30.0%", "now 700.0",
		"3 runs since", "last good " + good[:12],
		"benchfleet results bisect --model resnet50 --batch-size 8 --data-format bfloat16 --pool n150 --runner forge --test " + gate.ShellQuote(stepTest) + " --good " + good + " --bad " + bad} {
		if !strings.Contains(box, want) {
			t.Errorf("the series page's box does not say %q: %s", want, box)
		}
	}
	if !strings.Contains(page, `class="open-since"`) {
		t.Error("the series chart does not mark the open regression's first run")
	}
	_, body := get(t, hs.URL+"/")
	for what, p := range map[string]string{"home": body, "series page": page} {
		if m := goName.FindAllString(p, -1); m != nil {
			t.Errorf("the %s shows Go names %q", what, m)
		}
	}

	// Accepted: a new dashboard (the list is made again) lists it as such.
	if err := gate.Accept(t.Context(), store, gate.Acceptance{Series: ser, Commit: bad, Reason: "new firmware: slower, and correct", By: "alice@lab",
		At: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	hs = serve(t, uiOf(t, store))
	fleettest.Eventually(t, 30*time.Second, "the home page's accepted regressions", func() bool {
		_, body := get(t, hs.URL+"/")
		home = sectionOf(body, "open-regressions")
		return strings.Contains(home, `<tr class="accepted">`)
	})
	if strings.Contains(home, `<tr class="open">`) {
		t.Errorf("the accepted regression is listed as open on home: %s", plain(home))
	}
	if text := plain(home); !strings.Contains(text, "by alice@lab on") || !strings.Contains(text, "new firmware: slower, and correct") ||
		!strings.Contains(text, "None: no series has a step down") {
		t.Errorf("home does not list the accepted regression with who and why: %s", text)
	}
	_, page = get(t, hs.URL+html.UnescapeString(link[1]))
	if i := strings.Index(page, `<div class="regression-box accepted">`); i < 0 {
		t.Errorf("the series page shows no accepted regression")
	} else if box := plain(page[i:strings.Index(page, `<svg`)]); !strings.Contains(box, "Accepted regression since commit "+bad[:12]) ||
		!strings.Contains(box, "accepted by alice@lab on") || !strings.Contains(box, "new firmware: slower, and correct") {
		t.Errorf("the series page's box: %s", box)
	}
}

// The series page's y axis and noise band never go below zero, however
// noisy the series (runs between 100 and 1900 samples/sec: its band
// reaches far below zero).
func TestSeriesPageNeverBelowZero(t *testing.T) {
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := fleettest.SimJobs(t, "noisy", 1, nil)[0]
	j.Benchmark.Model = "noisy"
	now := time.Now().UTC()
	vals := []float64{100, 1900, 300, 1700, 1000, 600, 1400, 800, 1200, 500, 1500, 900}
	for i, v := range vals {
		plantResult(t, store, j, fmt.Sprintf("noisy-%02d", i), now.Add(-time.Duration(len(vals)-i)*time.Hour), "main", v)
	}
	hs := serve(t, uiOf(t, store))
	_, page := get(t, hs.URL+"/series?model=noisy&pool=sim&batch=4&format=bfloat16&runner=sim")
	chart := page[strings.Index(page, `<svg`):]
	chart = chart[:strings.Index(chart, `</svg>`)+len(`</svg>`)]
	// The chart's frame, its y ticks and its bands, decoded.
	var top, bottom float64
	var ticks []float64
	var bands []string
	var inY bool
	d := xml.NewDecoder(strings.NewReader(chart))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the series chart: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			a := map[string]string{}
			for _, at := range e.Attr {
				a[at.Name.Local] = at.Value
			}
			switch {
			case e.Name.Local == "g":
				inY = a["class"] == "y-axis"
			case e.Name.Local == "rect" && a["fill"] == "none":
				top, _ = strconv.ParseFloat(a["y"], 64)
				h, _ := strconv.ParseFloat(a["height"], 64)
				bottom = top + h
			case e.Name.Local == "polygon" && a["class"] == "band":
				bands = append(bands, a["points"])
			}
		case xml.CharData:
			if inY && strings.TrimSpace(string(e)) != "" {
				v, err := strconv.ParseFloat(strings.TrimSpace(string(e)), 64)
				if err != nil {
					t.Fatalf("y tick %q", e)
				}
				ticks = append(ticks, v)
			}
		case xml.EndElement:
			if e.Name.Local == "g" {
				inY = false
			}
		}
	}
	if len(ticks) < 3 || bottom <= top {
		t.Fatalf("y ticks %v, frame %v to %v", ticks, top, bottom)
	}
	for _, v := range ticks {
		if v < 0 {
			t.Errorf("y tick %v: below zero", v)
		}
	}
	if len(bands) == 0 {
		t.Fatal("no noise band drawn")
	}
	for _, b := range bands {
		for _, p := range strings.Fields(b) {
			_, ys, _ := strings.Cut(p, ",")
			if y, _ := strconv.ParseFloat(ys, 64); y > bottom+0.05 || y < top-0.05 {
				t.Errorf("the band reaches y %v, outside the plot (%v to %v)", y, top, bottom)
			}
		}
	}
}
