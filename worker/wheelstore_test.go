package worker_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build"
	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/s3"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker"
)

// storeBuildHost is a fake Tenstorrent host of nodes boards whose forge
// runner makes the builds jobs name with a cache fetching wheels from
// store as a worker process sets it up (an error that Is
// storage.ErrUnavailable is the store's), with the fetch deadlines given
// (0: the defaults).
func storeBuildHost(t *testing.T, store storage.Bucket, repos map[string]string, nodes int, fetchTimeout, fetchPerMiB time.Duration) *ttHost {
	t.Helper()
	cache, err := build.New(build.Config{Dir: filepath.Join(buildtest.Dir(t), "cache"), Repos: repos, Fetch: store.Get,
		NotFound:     func(err error) bool { return errors.Is(err, storage.ErrNotFound) },
		Unavailable:  func(err error) bool { return errors.Is(err, storage.ErrUnavailable) },
		FetchTimeout: fetchTimeout, FetchPerMiB: fetchPerMiB, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	host := harnesstest.NewTTHost(t, nodes)
	c := harnesstest.NewCheckout(t, protocol.RunnerForge, "", false)
	h := &ttHost{TTHost: host}
	dcfg := device.DiscoverConfig{TTSMI: h.TTSMI, DevRoot: h.DevRoot, SysRoot: h.Sys}
	devs, err := device.Discover(t.Context(), dcfg)
	if err != nil || len(devs) != nodes {
		t.Fatalf("discovered %+v (%v), want %d boards", devs, err, nodes)
	}
	k, _ := device.Lookup(protocol.RunnerForge)
	r, err := k.New(device.Settings{Workdir: c.Workdir, Python: c.Python, TempDir: t.TempDir(), HealthProbe: probes[protocol.RunnerForge], Builds: cache}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	health := device.NewTTHealth(dcfg)
	for _, d := range devs {
		d.Runner = protocol.RunnerForge
		h.slots = append(h.slots, worker.Slot{Device: d, Runner: r, Health: health})
	}
	return h
}

// s3BucketAt opens the bucket of srv through endpoint (the server's own, or
// a proxy in front of it), as a worker opens it.
func s3BucketAt(t *testing.T, srv *s3test.Server, endpoint string) *s3.Bucket {
	t.Helper()
	b, err := s3.NewBucket(t.Context(), s3.Config{Bucket: srv.Bucket, Prefix: "farm", Endpoint: endpoint,
		Region: s3test.Region, PathStyle: true, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// wheelJobs makes n forge jobs of run that name wheels at commit, each
// its own (label "i").
func wheelJobs(t *testing.T, run, commit string, wheels []protocol.Wheel, n int) []*protocol.Job {
	t.Helper()
	var jobs []*protocol.Job
	for i := range n {
		j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, map[string]string{"i": fmt.Sprint(i)})
		j.Source = protocol.Source{Repo: forgeRepoName, Commit: commit, Wheels: wheels}
		j.ID = protocol.JobID(j.Run, j.Cell())
		jobs = append(jobs, j)
	}
	return jobs
}

// spooledWorker starts a worker of f on slots with a spool over f's store
// (as a farm's workers run), retries of at most 2 s.
func spooledWorker(t *testing.T, f *ttFleet, id string, slots []worker.Slot) *worker.Worker {
	t.Helper()
	sp, err := spool.NewWithConfig(spool.Config{Dir: t.TempDir(), Bucket: f.store, RetryMin: 100 * time.Millisecond, RetryMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runSpool(t, sp)
	cfg := f.WorkerConfig(t, id, slots)
	cfg.Sink, cfg.Backoff, cfg.MaxBackoff = sp, 200*time.Millisecond, 2*time.Second
	return fleettest.StartWorker(t, cfg)
}

// storeOutage is how long the store refuses connections while jobs need
// a wheel from it: longer than the 4 deliveries' backoff (2+4+8 s with the
// defaults) many times over.
const storeOutage = 75 * time.Second

// The store (VersityGW) refuses connections for 75 s while 8 jobs on a
// host with a spool need a wheel no host has fetched. A wheel the store
// does not serve is the store's fault: each job goes back to the queue
// without using a delivery (many more deliveries than max_deliver pass),
// the worker says the store is not answering, nothing is dead-lettered,
// and once the store is back all 8 pass.
func TestWheelStoreOutageUsesNoDelivery(t *testing.T) {
	t.Parallel()
	buildtest.Python(t)
	gw := s3test.Start(t)
	bucket := s3BucketAt(t, gw, gw.Endpoint)
	f := &ttFleet{Fleet: fleettest.New(t, fleettest.Options{AckWait: 10 * time.Second, Store: bucket})}
	f.srv, f.js, f.topo, f.tc, f.store = f.URL, f.JS, f.Topo, f.Topology, f.Store
	repo, commits, wheels := forgeBuild(t, f)
	host := storeBuildHost(t, bucket, map[string]string{forgeRepoName: repo}, 4, 0, 0)
	w := spooledWorker(t, f, "tt-wheel-outage", host.slots)

	gw.Stop()
	down := time.Now()
	const run, n = "wheel-store-outage", 8
	jobs := wheelJobs(t, run, commits[0], wheels, n)
	fleettest.Submit(t, f.js, f.topo, nil, run, protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, storeOutage/2, "the worker to say the store is not answering", func() bool {
		code, body := healthz(t, w)
		return code == http.StatusOK && strings.Contains(body, "store not answering")
	})
	time.Sleep(time.Until(down.Add(storeOutage)))
	gw.Start()

	results := f.results(t, run, n)
	maxAttempt, passed := 0, 0
	for _, j := range jobs {
		r := results[j.ID]
		if r == nil || r.Status != protocol.StatusPassed || r.Build == nil || r.Build.Kind != protocol.BuildProvisioned {
			t.Errorf("job %s: %+v, want passed on its provisioned build", j.ID, r)
			continue
		}
		maxAttempt, passed = max(maxAttempt, r.Attempt), passed+1
	}
	if info, err := f.topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %d (%v), want none", info.State.Msgs, err)
	}
	const maxDeliver = 4 // the worker's default
	if maxAttempt <= maxDeliver {
		t.Errorf("the last attempt was %d: the outage should have outlasted %d counted deliveries", maxAttempt, maxDeliver)
	}
	evs := runEvents(t, f.js, run)
	retried := 0
	for _, j := range jobs {
		for _, e := range eventsOf(evs, j.ID, protocol.EventRetrying) {
			if !strings.Contains(e.Message, "without using a delivery") {
				t.Errorf("job %s handed back for another reason: %s", j.ID, e.Message)
			}
			retried++
		}
	}
	t.Logf("the store refused for %s: %d hand-backs, the last attempt %d; %d of %d jobs passed", storeOutage, retried, maxAttempt, passed, n)
}

// The store stops sending mid-download (a proxy in front of VersityGW stops
// forwarding once a wheel of 4 MiB is under way, and holds every
// connection since) while 4 jobs on 4 boards need that wheel: one slot
// fetches, three wait for the same build. The fetch's deadline (here 3 s
// without a byte) frees all four slots, each job goes back to the queue
// without using a delivery, and /healthz says the store is not answering;
// once the proxy forwards again every job passes.
func TestWheelStoreFrozenMidDownloadFreesSlots(t *testing.T) {
	t.Parallel()
	buildtest.Python(t)
	gw := s3test.Start(t)
	proxy := fleettest.StartProxy(t, strings.TrimPrefix(gw.Endpoint, "http://"))
	bucket := s3BucketAt(t, gw, "http://"+proxy.Addr())
	f := &ttFleet{Fleet: fleettest.New(t, fleettest.Options{AckWait: 10 * time.Second, Store: bucket})}
	f.srv, f.js, f.topo, f.tc, f.store = f.URL, f.JS, f.Topo, f.Topology, f.Store
	repo, commits := buildtest.Repo(t, harnesstest.Files(t, protocol.RunnerForge, "checkout"))
	dir := t.TempDir()
	var wheels []protocol.Wheel
	for _, pkg := range []string{"forge", "loguru"} {
		files := harnesstest.Files(t, protocol.RunnerForge, "site-packages/"+pkg)
		if pkg == "forge" {
			files["forge/_ballast.bin"] = rand.Text() + string(randomBytes(t, 4<<20)) // big enough to freeze mid-way
		}
		p, sum := buildtest.Wheel(t, dir, pkg, "1.0", files)
		wheels = append(wheels, buildtest.PutWheel(t, f.store, p, sum))
	}
	const fetchTimeout = 3 * time.Second
	host := storeBuildHost(t, bucket, map[string]string{forgeRepoName: repo}, 4, fetchTimeout, time.Second)
	w := spooledWorker(t, f, "tt-wheel-frozen", host.slots)

	proxy.FreezeAfter(1 << 20)
	const run, n = "wheel-store-frozen", 4
	jobs := wheelJobs(t, run, commits[0], wheels, n)
	fleettest.Submit(t, f.js, f.topo, nil, run, protocol.PriorityNormal, jobs)
	select {
	case <-proxy.Frozen():
	case <-time.After(2 * time.Minute):
		t.Fatal("the wheel's download never got under way")
	}
	stalled := time.Now()
	// Every job's first attempt ends within the fetch's deadline (and the
	// time for its slots to see it), not at the job's timeout.
	fleettest.Eventually(t, fetchTimeout+5*time.Second, "every job handed back", func() bool {
		evs := runEvents(t, f.js, run)
		for _, j := range jobs {
			if len(eventsOf(evs, j.ID, protocol.EventRetrying)) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("every job handed back %s after the store stopped sending (fetch timeout %s)", time.Since(stalled).Round(10*time.Millisecond), fetchTimeout)
	for _, e := range runEvents(t, f.js, run) {
		if e.Kind == protocol.EventRetrying && !strings.Contains(e.Message, "without using a delivery") {
			t.Errorf("job %s handed back for another reason: %s", e.Job, e.Message)
		}
	}
	if code, body := healthz(t, w); !strings.Contains(body, "store not answering") {
		t.Errorf("/healthz: %d %q, want it to say the store is not answering", code, body)
	}
	proxy.Thaw()
	results := f.results(t, run, n)
	for _, j := range jobs {
		if r := results[j.ID]; r == nil || r.Status != protocol.StatusPassed {
			t.Errorf("job %s: %+v, want passed", j.ID, r)
		}
	}
	if info, err := f.topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %d (%v), want none", info.State.Msgs, err)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
