package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/storage/storeurl"
	"github.com/benchfleet/benchfleet/worker"
)

// timedGet GETs u and says how long the page took (logged, never asserted:
// the bound is PageBudget's, the wait here only ends a hung page).
func timedGet(t *testing.T, u string) (int, string, time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second}
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v (after %s)", u, err, time.Since(start))
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String(), time.Since(start)
}

// A three-node cluster loses its quorum (two nodes stop) under the
// dashboard, which stays connected to the third: every page says so in a
// banner (NATS, since when, that JetStream has no leader) and renders what
// the store has, instead of raw errors and "0 workers / No run in
// progress"; a run page is read from the store.
func TestBrowserQuorumLostBanner(t *testing.T) {
	ctx, _ := browser(t)
	cluster, err := embedded.StartCluster(3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Shutdown)
	third := cluster.Servers[2].ClientURL()
	nc, js := fleettest.Connect(t, third)
	tc := topology.Config{AckWait: 10 * time.Second, Replicas: 3}
	topo := fleettest.Topology(t, js, tc)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fleettest.StartWorker(t, worker.Config{ID: "quorum-host", Conn: nc, Store: store, Slots: fleettest.SimSlots("sim", 2),
		AckWait: tc.AckWait, Replicas: tc.Replicas, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	fleettest.Submit(t, js, topo, store, "quorum-done", protocol.PriorityNormal, fleettest.SimJobs(t, "quorum-done", 2, map[string]string{"sim.duration": "10ms"}))
	fleettest.Eventually(t, 30*time.Second, "the first run's results", func() bool { return len(fleettest.Results(t, store, "quorum-done")) == 2 })
	fleettest.Submit(t, js, topo, store, "quorum-running", protocol.PriorityNormal, fleettest.SimJobs(t, "quorum-running", 3, map[string]string{"sim.duration": "5m"}))

	cfg := ui.Config{JS: js, Topology: topo, Store: store, Refresh: -1}
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	fleettest.Eventually(t, 30*time.Second, "two jobs running on the home page", func() bool {
		_, body, _ := timedGet(t, hs.URL+"/")
		return strings.Contains(body, "quorum-running") && strings.Contains(body, "2 running")
	})

	for _, n := range cluster.Servers[:2] {
		n.Shutdown()
		n.WaitForShutdown()
	}
	t.Logf("nodes %s and %s stopped: the cluster has lost its quorum", cluster.Servers[0].Name(), cluster.Servers[1].Name())

	b := &drive{t: t, ctx: ctx}
	dir := shots(t)
	// The last node's leaders step down once they miss their peers.
	var body string
	fleettest.Eventually(t, 30*time.Second, "the NATS banner on the home page", func() bool {
		code, b, took := timedGet(t, hs.URL+"/")
		t.Logf("home page with the quorum lost: HTTP %d in %s", code, took)
		body = b
		return code == http.StatusOK && strings.Contains(body, `id="outage-nats"`)
	})
	if strings.Contains(body, "No run in progress.") || !strings.Contains(body, "quorum-done") {
		t.Errorf("home page with the quorum lost: want the store's runs (quorum-done), never \"No run in progress.\":\n%s", body)
	}
	b.do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitReady("body"))
	if n := evalJS[int](b, `document.querySelectorAll('#outage-nats').length`); n != 1 {
		t.Fatalf("home page: %d NATS outage banners, want 1", n)
	}
	banner := b.text("#outage-nats")
	for _, want := range []string{"NATS is not answering since", "JetStream did not answer", "no leader"} {
		if !strings.Contains(banner, want) {
			t.Errorf("NATS banner %q: want %q", banner, want)
		}
	}
	b.shot(dir, "outage-quorum-lost-home.png")

	code, body, took := timedGet(t, hs.URL+"/runs/quorum-running")
	t.Logf("run page with the quorum lost: HTTP %d in %s", code, took)
	if code != http.StatusOK || !strings.Contains(body, `id="outage-nats"`) || !strings.Contains(body, "NATS (its events) is not answering") {
		t.Errorf("run page with the quorum lost: HTTP %d, want the run read from the store under the banner:\n%s", code, body)
	}
	b.do(chromedp.Navigate(hs.URL+"/runs/quorum-running"), chromedp.WaitVisible("#jobs"))
	b.shot(dir, "outage-quorum-lost-run.png")

	code, body, _ = timedGet(t, hs.URL+"/dlq")
	if code != http.StatusOK || !strings.Contains(body, `id="outage-nats"`) {
		t.Errorf("dead-letter page with the quorum lost: HTTP %d, want the banner", code)
	}
}

// The store stops while a worker with a spool runs jobs: the home page
// says so in a banner with what the worker has spooled, still lists the
// run in progress (from its events) and the fleet; then the store hangs
// (it accepts connections and answers nothing) and the page still comes
// back, with the banner.
func TestBrowserStoreDownBanner(t *testing.T) {
	ctx, _ := browser(t)
	s3 := s3test.Start(t)
	s3.SetEnv(t) // not parallel: sets the AWS_* environment
	bucket, err := storeurl.Open(t.Context(), s3.URL("farm"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	spoolDir := t.TempDir()
	sp, err := spool.NewWithConfig(spool.Config{Dir: spoolDir, Bucket: bucket, RetryMin: 100 * time.Millisecond, RetryMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopSpool := context.WithCancel(context.Background())
	t.Cleanup(stopSpool)
	go sp.Run(sctx)
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	fleettest.StartWorker(t, worker.Config{ID: "spool-host", Conn: nc, Store: bucket, Sink: sp, Slots: fleettest.SimSlots("sim", 4),
		AckWait: tc.AckWait, Backoff: 50 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})
	s, err := ui.New(ui.Config{JS: js, Topology: topo, Store: bucket, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	fleettest.Submit(t, js, topo, nil, "store-before", protocol.PriorityNormal, fleettest.SimJobs(t, "store-before", 2, map[string]string{"sim.duration": "10ms"}))
	fleettest.Eventually(t, 30*time.Second, "results in the store", func() bool { return len(fleettest.Results(t, bucket, "store-before")) == 2 })
	s3.Stop()
	fleettest.Submit(t, js, topo, nil, "store-down", protocol.PriorityNormal, append(
		fleettest.SimJobs(t, "store-down", 2, map[string]string{"sim.duration": "10ms"}),
		fleettest.SimJobs(t, "store-down-long", 2, map[string]string{"sim.duration": "5m"})...))
	fleettest.Eventually(t, 60*time.Second, "two results spooled", func() bool { return sp.Pending() >= 2 })

	b := &drive{t: t, ctx: ctx}
	dir := shots(t)
	var body string
	fleettest.Eventually(t, 30*time.Second, "the worker's spool in the store banner", func() bool {
		var code int
		var took time.Duration
		code, body, took = timedGet(t, hs.URL+"/")
		t.Logf("home page with the store down: HTTP %d in %s", code, took)
		return strings.Contains(body, `id="outage-store"`) && strings.Contains(body, "spool-host: 2 results in "+spoolDir)
	})
	for _, want := range []string{"The result store is not answering since", "store-down", "2 running", "spool-host"} {
		if !strings.Contains(body, want) {
			t.Errorf("home page with the store down: no %q", want)
		}
	}
	if strings.Contains(body, "No run in progress") {
		t.Errorf("home page with the store down says No run in progress while store-down runs")
	}
	b.do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#outage-store"))
	b.shot(dir, "outage-store-down-home.png")

	// Hung: connections accepted, nothing answered.
	s3.Start()
	fleettest.Eventually(t, 30*time.Second, "the banner gone once the store answers", func() bool {
		_, body, _ = timedGet(t, hs.URL+"/")
		return !strings.Contains(body, `id="outage-store"`)
	})
	s3.Freeze()
	t.Cleanup(s3.Thaw)
	code, body, took := timedGet(t, hs.URL+"/")
	t.Logf("home page with the store hung: HTTP %d in %s", code, took)
	if code != http.StatusOK || !strings.Contains(body, `id="outage-store"`) || !strings.Contains(body, "store-down") {
		t.Errorf("home page with the store hung: HTTP %d, want the banner and the runs", code)
	}
}
