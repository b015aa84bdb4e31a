package ui_test

import (
	"context"
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

	"github.com/benchfleet/benchfleet/internal/testfleet"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

const chromium = "/usr/bin/chromium"

func newFarm(t *testing.T) (ui.Config, func(run string, jobs []*protocol.Job)) {
	t.Helper()
	srv := testfleet.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	nc, _ := testfleet.Connect(t, srv.ClientURL())
	_, js := testfleet.Connect(t, srv.ClientURL())
	topo := testfleet.Topology(t, js, tc)
	store, err := storage.NewFileBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testfleet.StartWorker(t, worker.Config{ID: "ui-host", Conn: nc, Store: store, Slots: testfleet.SimSlots("sim", 2),
		Topology: tc, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	cfg := ui.Config{JS: js, Topology: topo, Store: store}
	submit := func(run string, jobs []*protocol.Job) {
		testfleet.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	}
	return cfg, submit
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
	cfg, submit := newFarm(t)
	store := cfg.Store

	// A regression: 10 results of the series on main near 1000 samples/s,
	// then a run at 800.
	reg := testfleet.SimJobs(t, "ui-regressed", 1, map[string]string{"sim.duration": "20ms", "sim.samples_per_sec": "800"})
	reg[0].Benchmark.Model = "simreg"
	plantHistory(t, store, reg[0], 1000)
	submit("ui-regressed", reg)
	// A slow run, still going while the browser looks.
	slow := testfleet.SimJobs(t, "ui-slow", 3, map[string]string{"sim.duration": "4s", "sim.samples_per_sec": "500"})
	submit("ui-slow", slow)

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
	testfleet.Eventually(t, 30*time.Second, "the regressed run's result", func() bool {
		return len(testfleet.Results(t, store, "ui-regressed")) == 1
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
