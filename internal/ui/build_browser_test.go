package ui_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A job page says what its result measured: the provisioned build (its
// kind, commit, wheels with their sha256, cache and setup time, and setup
// among the phases), or the host's build, with a warning when the job
// named a commit. The results are stored by hand for jobs no worker
// serves.
func TestBrowserJobShowsBuild(t *testing.T) {
	ctx, _ := browser(t)
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{AckWait: 10 * time.Second})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const (
		commit = "0123456789abcdef0123456789abcdef01234567"
		sum    = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
		wheel  = "tt_forge-0.1.dev1-cp310-cp310-linux_x86_64.whl"
	)
	src := submit.SourceSpec{Repo: "acme/forge", Commit: commit, Wheels: []submit.WheelSpec{{URL: protocol.BuildKey(sum, wheel), SHA256: sum}}}
	var jobs []*protocol.Job
	for _, spec := range []struct {
		model string
		src   submit.SourceSpec
	}{{"provisioned", src}, {"hosted", submit.SourceSpec{Repo: "acme/forge", Commit: commit}}} {
		j, err := submit.JobSpec{Pool: "n150", Runner: "forge", Benchmark: submit.BenchmarkSpec{
			Test: "forge/test/benchmark/test_vision.py::test_resnet50", Model: spec.model, BatchSize: 8, LoopCount: 32}}.Job("ui-builds", spec.src)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	res := fleettest.Submit(t, js, topo, store, "ui-builds", protocol.PriorityNormal, jobs)
	builds := []*protocol.BuildInfo{
		{Kind: protocol.BuildProvisioned, Commit: commit, Cache: protocol.CacheMiss, SetupS: 12.5,
			Wheels: []protocol.WheelInfo{{Name: wheel, SHA256: sum}}},
		{Kind: protocol.BuildHost, Commit: commit},
	}
	for i, j := range jobs {
		start := res.Manifest.CreatedAt.Add(time.Second)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: j.ID, Run: j.Run, RunCreatedAt: res.Manifest.CreatedAt,
			Pool: j.Pool, Runner: j.Runner, Status: protocol.StatusPassed, Attempt: 1, StartedAt: start, FinishedAt: start.Add(time.Minute),
			Worker: protocol.WorkerRef{ID: "tt-host", Host: "tt-host"}, Device: protocol.DeviceRef{ID: "tt0", Pool: j.Pool},
			Benchmark: j.Benchmark, Source: j.Source, Build: builds[i],
			Phases:       protocol.Phases{SetupS: builds[i].SetupS, CompileS: 30, WarmupS: 2, TimingS: 8},
			Measurements: protocol.Measurements{TotalSamples: 256, TotalTimeS: 8, SamplesPerSec: 32},
			PCC:          protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ui.New(ui.Config{JS: js, Topology: topo, Store: store, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	b := &drive{t: t, ctx: ctx}
	dir := shots(t)

	b.do(chromedp.Navigate(hs.URL+"/runs/ui-builds/jobs/"+jobs[0].ID), chromedp.WaitVisible("#job-build"))
	build := b.text("#job-build")
	for _, want := range []string{"provisioned", commit, "cache miss", "setup 12.50s", wheel, "sha256 " + sum} {
		if !strings.Contains(build, want) {
			t.Errorf("the provisioned job's build %q lacks %q", build, want)
		}
	}
	if strings.Contains(build, "host") {
		t.Errorf("the provisioned job's build says host: %q", build)
	}
	b.shot(dir, "job-build-provisioned.png")
	page := b.text("body")
	if !strings.Contains(page, "setup 12.50s · compile 30.00s") {
		t.Errorf("the provisioned job's phases lack setup:\n%s", page)
	}

	b.do(chromedp.Navigate(hs.URL+"/runs/ui-builds/jobs/"+jobs[1].ID), chromedp.WaitVisible("#job-build"))
	build = b.text("#job-build")
	b.shot(dir, "job-build-host.png")
	if !strings.HasPrefix(build, "host's installed build") || !strings.Contains(build, "named commit "+commit+" but ran the host's installed build") {
		t.Errorf("the host job's build %q does not say it ran the host's build instead of the commit", build)
	}
	if page := b.text("body"); strings.Contains(page, "setup 0") || strings.Contains(page, "phases\tsetup") {
		t.Errorf("the host job shows a setup phase:\n%s", page)
	}
}
