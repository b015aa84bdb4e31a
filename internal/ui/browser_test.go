package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

const chromium = "/usr/bin/chromium"

func newFarm(t *testing.T) (ui.Config, func(run string, jobs []*protocol.Job)) {
	t.Helper()
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fleettest.StartWorker(t, worker.Config{ID: "ui-host", Conn: nc, Store: store, Slots: fleettest.SimSlots("sim", 2),
		AckWait: tc.AckWait, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	cfg := ui.Config{JS: js, Topology: topo, Store: store}
	publish := func(run string, jobs []*protocol.Job) {
		fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	}
	return cfg, publish
}

// plantHistory stores passed results of the series of job j on main,
// around base samples/sec (±1%), in the hours before now.
func plantHistory(t *testing.T, store storage.Bucket, j *protocol.Job, base float64) {
	t.Helper()
	devs := []float64{-0.010, 0.002, -0.008, 0.004, -0.006, 0.006, -0.004, 0.008, -0.002, 0.010}
	now := time.Now().UTC()
	for i, d := range devs {
		created := now.Add(-time.Duration(len(devs)-i) * time.Hour)
		run := fmt.Sprintf("hist-%d", i)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID(run, j.Cell()), Run: run, RunCreatedAt: created,
			Pool: j.Pool, Runner: j.Runner, Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark:    j.Benchmark,
			Source:       protocol.Source{Repo: "acme/bench", Commit: fmt.Sprintf("%07dabcdef%033d", i, i), Branch: "main"},
			Measurements: protocol.Measurements{SamplesPerSec: base * (1 + d)},
			PCC:          protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
}

// browser starts headless Chromium (skipped without it unless
// BENCHFLEET_REQUIRE_BROWSER=1) and records every URL it requests.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		msg := fmt.Sprintf("no Chromium at %s (install it with scripts/install-chromium.sh, run by `make tools`)", chromium)
		if os.Getenv("BENCHFLEET_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + "; BENCHFLEET_REQUIRE_BROWSER=1 requires it")
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	var mu sync.Mutex
	var urls []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}
}

func shots(t *testing.T) string {
	dir := os.Getenv("BENCHFLEET_UI_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// drive runs browser actions, failing the test on an error.
type drive struct {
	t   *testing.T
	ctx context.Context
}

func (b *drive) do(acts ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for _, a := range acts {
		if _, err := chromedp.Run(b.ctx, a); err != nil {
			b.t.Fatal(err)
		}
	}
}

func (b *drive) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *drive) shot(dir, name string) {
	t, ctx := b.t, b.ctx
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// The dashboard in a real browser: home shows the worker ui-host and a run
// just submitted; clicking goes home → run → job → series; a run page shows
// its jobs and their status, and live while it runs; the page of a run
// with a planted regression flags it with its baseline; every request the
// browser makes is to the server itself.
func TestBrowserDashboard(t *testing.T) {
	ctx, requests := browser(t)
	cfg, publish := newFarm(t)
	store := cfg.Store

	// A regression: 10 results of the series on main near 1000 samples/s,
	// then a run at 800.
	reg := fleettest.SimJobs(t, "ui-regressed", 1, map[string]string{"sim.duration": "20ms", "sim.samples_per_sec": "800"})
	reg[0].Benchmark.Model = "simreg"
	plantHistory(t, store, reg[0], 1000)
	publish("ui-regressed", reg)
	// A slow run, still going while the browser looks.
	slow := fleettest.SimJobs(t, "ui-slow", 3, map[string]string{"sim.duration": "4s", "sim.samples_per_sec": "500"})
	publish("ui-slow", slow)

	still := cfg
	still.Refresh = -1
	s1, err := ui.New(still)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s1)
	t.Cleanup(hs.Close)
	live := cfg
	live.Refresh = time.Second
	s2, err := ui.New(live)
	if err != nil {
		t.Fatal(err)
	}
	hl := httptest.NewServer(s2)
	t.Cleanup(hl.Close)
	dir := shots(t)

	// The regressed run finishes first.
	fleettest.Eventually(t, 30*time.Second, "the regressed run's result", func() bool {
		return len(fleettest.Results(t, store, "ui-regressed")) == 1
	})

	b := &drive{t: t, ctx: ctx}
	b.do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#fleet"))
	fleet, active, recent := b.text("#fleet"), b.text("#active"), b.text("#recent")
	if !strings.Contains(fleet, "ui-host") {
		t.Errorf("home's fleet does not show ui-host:\n%s", fleet)
	}
	if !strings.Contains(active, "ui-slow") {
		t.Errorf("home's runs in progress do not show the run just submitted:\n%s", active)
	}
	if !strings.Contains(recent, "ui-regressed") || !strings.Contains(recent, "REGRESSION") {
		t.Errorf("home's recent runs do not show ui-regressed as REGRESSION:\n%s", recent)
	}
	b.shot(dir, "home.png")

	// home → run → job → series, by clicking.
	b.do(chromedp.Click(`#recent a[href="/runs/ui-regressed"]`, chromedp.NodeVisible), chromedp.WaitVisible("#jobs"))
	jobs, outcome, regs := b.text("#jobs"), b.text("#outcome"), b.text("#regressions")
	if outcome != "REGRESSION" || !strings.Contains(regs, "simreg/sim/bs4") || !strings.Contains(regs, "baseline 1000") {
		t.Errorf("run page of the regressed run: outcome %q, regressions %q", outcome, regs)
	}
	if !strings.Contains(jobs, "passed") || !strings.Contains(jobs, "regression") || !strings.Contains(jobs, "ui-host") {
		t.Errorf("run page's jobs lack status, verdict or worker:\n%s", jobs)
	}
	if state := b.text("#run-state"); state != "regression" {
		t.Errorf("run page of the regressed run: state chip %q beside the REGRESSION banner, want regression", state)
	}
	b.shot(dir, "run-regressed.png")
	b.do(chromedp.Click(`#jobs tbody tr td a`, chromedp.NodeVisible), chromedp.WaitVisible("#job-status"))
	if status := b.text("#job-status"); status != "passed" {
		t.Errorf("job page status %q, want passed", status)
	}
	b.shot(dir, "job.png")
	b.do(chromedp.Click("#series-link", chromedp.NodeVisible), chromedp.WaitVisible("#chart"))
	table := b.text("#points")
	titles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#chart a.point title')).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(titles) != 11 || !strings.Contains(strings.Join(titles, "\n"), "main@0000009") {
		t.Errorf("series chart: %d points, titles %q; want 11 with the planted commits", len(titles), titles)
	}
	if !strings.Contains(table, "regression") {
		t.Errorf("series table does not mark the regression:\n%s", table)
	}
	if sum := b.text(".summary"); !strings.Contains(sum, "1 regression ·") {
		t.Errorf("series summary %q, want \"1 regression ·\"", sum)
	}
	b.shot(dir, "series.png")

	// The slow run's page, live: it shows its jobs running, then (reloading
	// itself) their results.
	b.do(chromedp.Navigate(hl.URL+"/runs/ui-slow"), chromedp.WaitVisible("#jobs"))
	state := b.text("#run-state")
	if state == "passed" {
		t.Log("the slow run had already finished")
	}
	b.shot(dir, "run-live.png")
	deadline := time.Now().Add(60 * time.Second)
	for state != "passed" {
		if time.Now().After(deadline) {
			t.Fatalf("the live run page still says %q", state)
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#run-state")); err == nil {
			state, _ = chromedp.Run(ctx, chromedp.Text("#run-state"))
		}
	}
	if jobs := b.text("#jobs"); strings.Count(jobs, "passed") != 3 {
		t.Errorf("the finished slow run's jobs:\n%s", jobs)
	}
	b.shot(dir, "run-finished.png")

	// Nothing from outside the server.
	urls := requests()
	if len(urls) < 6 {
		t.Errorf("only %d requests seen: %q", len(urls), urls)
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, hs.URL+"/") && !strings.HasPrefix(u, hl.URL+"/") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			t.Errorf("the browser requested %s, outside the server", u)
		}
	}
}

func topologyConfig() topology.Config { return topology.Config{AckWait: 10 * time.Second} }

func itoa(n int) string { return fmt.Sprint(n) }

// plantResult stores a passed result of job j's series as run, created at
// created on branch, at sps samples/sec.
func plantResult(t *testing.T, store storage.Bucket, j *protocol.Job, run string, created time.Time, branch string, sps float64) {
	t.Helper()
	r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID(run, j.Cell()), Run: run, RunCreatedAt: created,
		Pool: j.Pool, Runner: j.Runner, Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
		Benchmark:    j.Benchmark,
		Source:       protocol.Source{Repo: "acme/bench", Commit: fmt.Sprintf("%07dfeed%040d", len(run), 0)[:40], Branch: branch},
		Measurements: protocol.Measurements{SamplesPerSec: sps},
		PCC:          protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
	if _, err := storage.PutResult(t.Context(), store, r); err != nil {
		t.Fatal(err)
	}
}

// evalJS evaluates expr in the page, failing the test on an error.
func evalJS[T any](b *drive, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// textOf is the text of the first element sel matches ("" when none),
// without waiting for it.
func textOf(b *drive, sel string) string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	return evalJS[string](b, `(document.querySelector(`+string(q)+`) || {textContent: ''}).textContent`)
}

// The dashboard as a user reads it: a board's done and
// failures counts come from its stored results, so a worker restart does
// not reset them; the fleet summary says "1 worker"; a cancelled run's jobs
// read cancelled at the gate, their reasons cut at a word with the whole
// text in the title; a job without history says it has no baseline yet and
// shows its priority, loop and warmup counts and labels; dead letters link
// to their jobs; a page that does not exist keeps the navigation and a way
// back; a series draws its baseline branch as the line and other branches
// as points, under x-axis labels that differ.
func TestBrowserReadsAsAUser(t *testing.T) {
	ctx, _ := browser(t)
	srv := fleettest.Server(t)
	tc := topologyConfig()
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	startWorker := func() *worker.Worker {
		nc, _ := fleettest.Connect(t, srv.ClientURL())
		w, err := worker.New(worker.Config{ID: "ui-reader", Conn: nc, Store: store, Slots: fleettest.SimSlots("sim", 2),
			AckWait: tc.AckWait, IdlePoll: 100 * time.Millisecond, WorkDir: t.TempDir(), Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(context.Background())
		if err := w.Start(wctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-w.Done() })
		return w
	}
	publish := func(run string, jobs []*protocol.Job) {
		fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	}
	cfg := ui.Config{JS: js, Topology: topo, Store: store, Refresh: -1}
	hs := serve(t, cfg)
	dir := shots(t)
	b := &drive{t: t, ctx: ctx}

	// Two jobs that pass and one that fails for good (a failed result and
	// a dead letter), then the worker restarts.
	w := startWorker()
	publish("ui-ok", fleettest.SimJobs(t, "ui-ok", 2, nil))
	failing := fleettest.SimJobs(t, "ui-fail", 1, map[string]string{"sim.fail": "permanent"})
	publish("ui-fail", failing)
	fleettest.Eventually(t, 30*time.Second, "the three results", func() bool {
		return len(fleettest.Results(t, store, "ui-ok")) == 2 && len(fleettest.Results(t, store, "ui-fail")) == 1
	})
	fleettest.Eventually(t, 30*time.Second, "the dead letter", func() bool {
		_, body := get(t, hs.URL+"/dlq")
		return strings.Contains(body, failing[0].ID)
	})
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := w.Status().StartedAt
	w = startWorker()
	fleettest.Eventually(t, 30*time.Second, "the restarted worker's heartbeat", func() bool {
		e, err := topo.Workers.Get(t.Context(), "ui-reader")
		var st protocol.WorkerStatus
		return err == nil && json.Unmarshal(e.Value(), &st) == nil && st.StartedAt.After(before)
	})

	b.do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#fleet"))
	if sum := textOf(b, "#fleet .summary"); !strings.HasPrefix(sum, "1 worker ·") {
		t.Errorf("fleet summary %q, want it to start with \"1 worker ·\"", sum)
	}
	done := evalJS[[]string](b, `Array.from(document.querySelectorAll('#fleet tr.dev td:nth-last-child(3)')).map(e => e.textContent.trim())`)
	fails := evalJS[[]string](b, `Array.from(document.querySelectorAll('#fleet tr.dev td:nth-last-child(2)')).map(e => e.textContent.trim())`)
	total := func(cells []string) int {
		n := 0
		for _, c := range cells {
			var v int
			fmt.Sscan(c, &v)
			n += v
		}
		return n
	}
	if len(done) != 2 || total(done) != 3 || len(fails) != 2 || total(fails) != 1 {
		t.Errorf("after the worker restarted, its boards show done %q and failures %q; want 3 done and 1 failure in all", done, fails)
	}
	b.shot(dir, "home-restarted.png")

	// The job page of a job without history.
	ok := fleettest.Results(t, store, "ui-ok")
	var okJob string
	for id, r := range ok {
		if r.Labels["i"] == "0" {
			okJob = id
		}
	}
	b.do(chromedp.Navigate(hs.URL+"/runs/ui-ok/jobs/"+okJob), chromedp.WaitVisible("#job-status"))
	gate := textOf(b, "#job-gate")
	if !strings.Contains(gate, "no baseline yet") || strings.Contains(gate, "0 results") || strings.Contains(gate, "±-") {
		t.Errorf("gate of a job without history: %q, want it to say \"no baseline yet\"", gate)
	}
	spec := textOf(b, "#job-spec") + " · " + textOf(b, "#job-labels")
	for _, want := range []string{"priority normal", "10 loops", "10 warmup", "i=0"} {
		if !strings.Contains(spec, want) {
			t.Errorf("job page's spec %q lacks %q", spec, want)
		}
	}
	b.shot(dir, "job-no-history.png")

	// Dead letters link to their jobs.
	b.do(chromedp.Navigate(hs.URL+"/dlq"), chromedp.WaitVisible("main"))
	b.shot(dir, "dlq.png")
	link := `main a[href="/runs/ui-fail/jobs/` + failing[0].ID + `"]`
	if n := evalJS[int](b, `document.querySelectorAll('`+link+`').length`); n != 1 {
		t.Errorf("the dead-letter page has %d links to the dead job's page, want 1", n)
	} else {
		b.do(chromedp.Click(link, chromedp.NodeVisible), chromedp.WaitVisible("#job-status"))
		if st := b.text("#job-status"); st != "failed" {
			t.Errorf("job page of the dead letter: status %q, want failed", st)
		}
	}

	// Pages that do not exist keep the navigation and a way back.
	for _, c := range []struct{ path, back string }{
		{"/nope", "/"},
		{"/runs/nope", "/"},
		{"/runs/ui-ok/jobs/nope", "/runs/ui-ok"},
	} {
		b.do(chromedp.Navigate(hs.URL+c.path), chromedp.WaitReady("body"))
		nav := evalJS[int](b, `document.querySelectorAll('header nav a[href="/dlq"]').length`)
		back := evalJS[string](b, `(document.querySelector('#back') || {}).getAttribute ? document.querySelector('#back').getAttribute('href') : ''`)
		if nav != 1 || back != c.back {
			t.Errorf("%s: %d navigation links to the dead letters, back link %q; want 1 and %q", c.path, nav, back, c.back)
		}
		if c.path == "/runs/ui-ok/jobs/nope" {
			b.shot(dir, "not-found.png")
		}
	}

	// A cancelled run: two jobs stopped while running, two removed from
	// the queue.
	publish("ui-cancel", fleettest.SimJobs(t, "ui-cancel", 4, map[string]string{"sim.duration": "30s"}))
	fleettest.Eventually(t, 30*time.Second, "two jobs running", func() bool {
		_, body := get(t, hs.URL+"/runs/ui-cancel")
		return strings.Count(body, `class="status running"`) == 2
	})
	if _, err := submit.CancelRun(t.Context(), js, submit.CancelRequest{Run: "ui-cancel", Store: store}); err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the cancelled run's four results", func() bool {
		return len(fleettest.Results(t, store, "ui-cancel")) == 4
	})
	// And one cancelled while no worker runs: both its jobs are removed
	// from the queue, with the longer reason that says so.
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	publish("ui-cancel-queued", fleettest.SimJobs(t, "ui-cancel-queued", 2, nil))
	if _, err := submit.CancelRun(t.Context(), js, submit.CancelRequest{Run: "ui-cancel-queued", Store: store}); err != nil {
		t.Fatal(err)
	}
	for run, n := range map[string]int{"ui-cancel": 4, "ui-cancel-queued": 2} {
		b.do(chromedp.Navigate(hs.URL+"/runs/"+run), chromedp.WaitVisible("#jobs"))
		gates := evalJS[[]string](b, `Array.from(document.querySelectorAll('#jobs tbody tr td:nth-child(12)')).map(e => e.textContent.trim())`)
		if len(gates) != n {
			t.Errorf("%s: %d gate cells, want %d", run, len(gates), n)
		}
		for _, g := range gates {
			if g != "cancelled" {
				t.Errorf("%s: a job's gate reads %q, want cancelled", run, g)
			}
		}
		reasons := evalJS[[][2]string](b, `Array.from(document.querySelectorAll('#jobs .reason')).map(e => [e.textContent, e.getAttribute('title') || ''])`)
		if len(reasons) != n {
			t.Errorf("%s: %d reasons, want %d", run, len(reasons), n)
		}
		for _, r := range reasons {
			shown, full := strings.TrimSuffix(r[0], "…"), r[1]
			if !strings.HasPrefix(full, shown) || (len(shown) < len(full) && !strings.ContainsAny(full[len(shown):len(shown)+1], " ,;:.()")) {
				t.Errorf("%s: reason shown as %q is not the whole of %q or cut at a word", run, r[0], full)
			}
		}
		b.shot(dir, "run-"+run+".png")
	}

	// A series with results on main and on a feature branch, minutes apart.
	ser := fleettest.SimJobs(t, "ui-branches", 1, nil)[0]
	ser.Benchmark.Model = "simbranch"
	now := time.Now().UTC()
	mainN, featN := 0, 0
	for i := range 12 {
		created := now.Add(-time.Duration(12-i) * 20 * time.Second)
		if i%4 == 3 {
			plantResult(t, store, ser, fmt.Sprintf("feat-%d", i), created, "feature/x", 600)
			featN++
		} else {
			plantResult(t, store, ser, fmt.Sprintf("main-%d", i), created, "main", 1000+float64(i))
			mainN++
		}
	}
	b.do(chromedp.Navigate(hs.URL+"/series?model=simbranch&pool=sim&batch=4&format=bfloat16&runner=sim"), chromedp.WaitVisible("#chart"))
	trend := evalJS[string](b, `(document.querySelector('#chart polyline.trend') || {getAttribute: () => ''}).getAttribute('points')`)
	if n := len(strings.Fields(trend)); n != mainN {
		t.Errorf("series line joins %d points, want the %d on main", n, mainN)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#chart .pt.branch').length`); n != featN {
		t.Errorf("series chart: %d points of other branches, want %d", n, featN)
	}
	labels := evalJS[[]string](b, `Array.from(document.querySelectorAll('#chart text.tick.x')).map(e => e.textContent)`)
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			t.Errorf("x-axis labels repeat %q: %q", l, labels)
		}
		seen[l] = true
	}
	if len(labels) < 3 {
		t.Errorf("x-axis labels %q: want at least 3", labels)
	}
	b.shot(dir, "series-branches.png")
}
