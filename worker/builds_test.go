package worker_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build"
	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker"
)

// buildHost is a fake Tenstorrent host whose forge runner provisions the
// builds jobs name from a build cache of its own, its test trees from
// repos.
func buildHost(t *testing.T, f *ttFleet, repos map[string]string) *ttHost {
	t.Helper()
	return buildHostFetching(t, f.store.Get, repos)
}

// buildHostFetching is buildHost whose cache fetches wheels with fetch.
func buildHostFetching(t *testing.T, fetch func(context.Context, string) (io.ReadCloser, error), repos map[string]string) *ttHost {
	t.Helper()
	cache, err := build.New(build.Config{Dir: filepath.Join(buildtest.Dir(t), "cache"), Repos: repos, Fetch: fetch,
		NotFound: func(err error) bool { return errors.Is(err, storage.ErrNotFound) }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	host := harnesstest.NewTTHost(t, 1)
	c := harnesstest.NewCheckout(t, protocol.RunnerForge, "", false)
	h := &ttHost{TTHost: host}
	dcfg := device.DiscoverConfig{TTSMI: h.TTSMI, DevRoot: h.DevRoot, SysRoot: h.Sys}
	devs, err := device.Discover(t.Context(), dcfg)
	if err != nil || len(devs) != 1 {
		t.Fatalf("discovered %+v (%v), want one board", devs, err)
	}
	k, _ := device.Lookup(protocol.RunnerForge)
	r, err := k.New(device.Settings{Workdir: c.Workdir, Python: c.Python, TempDir: t.TempDir(), HealthProbe: probes[protocol.RunnerForge], Builds: cache}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	devs[0].Runner = protocol.RunnerForge
	h.slots = []worker.Slot{{Device: devs[0], Runner: r, Health: device.NewTTHealth(dcfg)}}
	return h
}

// A host whose build cache cannot read its mirror pauses its slots (out
// of service, saying why) and the job passes on a host that can; after
// the pause the host looks again and serves.
func TestBuildCacheFaultPausesTheHost(t *testing.T) {
	t.Parallel()
	buildtest.Python(t)
	f := newTTFleet(t)
	repo, commits, wheels := forgeBuild(t, f)
	broken := buildHost(t, f, map[string]string{forgeRepoName: filepath.Join(t.TempDir(), "no-such-mirror.git")})
	nc, _ := fleettest.Connect(t, f.srv)
	wb := fleettest.StartWorker(t, worker.Config{ID: "tt-broken-mirror", Conn: nc, Store: f.store, Slots: broken.slots, AckWait: f.tc.AckWait,
		Backoff: 200 * time.Millisecond, IdlePoll: 100 * time.Millisecond, BuildFaultPause: 2 * time.Second, Log: zerolog.Nop()})

	const run = "build-broken-mirror"
	j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	j.Source = protocol.Source{Repo: forgeRepoName, Commit: commits[0], Wheels: wheels}
	j.ID = protocol.JobID(j.Run, j.Cell())
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, time.Minute, "the broken host paused", func() bool {
		d := wb.Status().Devices[0]
		return d.State == protocol.DeviceQuarantined && strings.Contains(d.Reason, "build cache") && strings.Contains(d.Reason, "no-such-mirror")
	})
	healthy := buildHost(t, f, map[string]string{forgeRepoName: repo})
	f.start(t, "tt-good-mirror", healthy.slots)
	r := f.results(t, run, 1)[j.ID]
	if r.Status != protocol.StatusPassed || r.Worker.ID != "tt-good-mirror" || r.Build == nil || r.Build.Kind != protocol.BuildProvisioned {
		t.Fatalf("result: %s by %s build %+v (%+v), want passed on the healthy host's provisioned build", r.Status, r.Worker.ID, r.Build, r.Error)
	}
	fleettest.Eventually(t, time.Minute, "the broken host back after its pause", func() bool {
		return wb.Status().Devices[0].State == protocol.DeviceIdle
	})
}

// The store failing to serve a wheel is no fault of the board: the job
// is retried and passes, the board is neither reset nor blamed. (The
// worker, without a spool, takes the store for down until its probe finds
// it answering, so a second delivery may be handed back meanwhile.)
func TestBuildStoreFailureIsNotTheBoards(t *testing.T) {
	t.Parallel()
	buildtest.Python(t)
	f := newTTFleet(t)
	repo, commits, wheels := forgeBuild(t, f)
	var fails atomic.Int32
	host := buildHostFetching(t, func(ctx context.Context, key string) (io.ReadCloser, error) {
		if fails.Add(1) == 1 {
			return nil, errors.New("store unavailable (the test's first fetch)")
		}
		return f.store.Get(ctx, key)
	}, map[string]string{forgeRepoName: repo})
	w := f.start(t, "tt-store-blip", host.slots)
	const run = "build-store-blip"
	j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	j.Source = protocol.Source{Repo: forgeRepoName, Commit: commits[0], Wheels: wheels}
	j.ID = protocol.JobID(j.Run, j.Cell())
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	r := f.results(t, run, 1)[j.ID]
	if r.Status != protocol.StatusPassed || r.Attempt < 2 || r.Build == nil || r.Build.Cache != protocol.CacheMiss {
		t.Fatalf("result: %s attempt %d build %+v (%+v), want passed at a later attempt on a build made then", r.Status, r.Attempt, r.Build, r.Error)
	}
	if slices.Contains(host.Calls(t), "tt-smi -r "+bdf0) {
		t.Fatalf("the board was reset for the store's failure: %q", host.Calls(t))
	}
	if d := w.Status().Devices[0]; d.State == protocol.DeviceQuarantined || (d.Health != nil && d.Health.Infra+d.Health.Hangs+d.Health.Resets > 0) {
		t.Fatalf("the board is blamed for the store's failure: %+v", d)
	}
}

// forgeRepoName is the source.repo the build tests' jobs name.
const forgeRepoName = "tenstorrent/tt-forge-onnx"

// forgeBuild makes the forge tree's repository (one commit) and stores
// the forge and loguru stand-ins as the build's wheels.
func forgeBuild(t *testing.T, f *ttFleet) (repo string, commits []string, wheels []protocol.Wheel) {
	t.Helper()
	repo, commits = buildtest.Repo(t, harnesstest.Files(t, protocol.RunnerForge, "checkout"))
	dir := t.TempDir()
	for _, pkg := range []string{"forge", "loguru"} {
		p, sum := buildtest.Wheel(t, dir, pkg, "1.0", harnesstest.Files(t, protocol.RunnerForge, "site-packages/"+pkg))
		wheels = append(wheels, buildtest.PutWheel(t, f.store, p, sum))
	}
	return repo, commits, wheels
}
