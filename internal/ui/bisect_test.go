package ui_test

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A series page shows one bisect command, for a series whose results ran
// wheels (only a provisioned build can be bisected): under the oldest
// regressed row since the last good one, good the newest older commit of
// the baseline branch the gate did not judge a regression, bad that row's.
// The attempts of a regressed job (its confirmation repeats, each a row)
// and the regressed commits after it show no more; a series of the sim
// runner, without wheels, shows none.
func TestSeriesShowsItsBisectOnce(t *testing.T) {
	t.Parallel()
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const test = "forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]"
	commit := func(i int) string { return fmt.Sprintf("%02d%038x", i, 0xbeef) }
	sum := strings.Repeat("c", 64)
	wheels := []protocol.Wheel{{URL: protocol.BuildKey(sum, "forge-1.0-py3-none-any.whl"), SHA256: sum}}
	base := time.Now().UTC().Add(-48 * time.Hour)
	put := func(job string, i int, pool, runner, model string, sps float64) {
		t.Helper()
		branch := "main"
		if i == 6 {
			branch = "feature/x"
		}
		created := base.Add(time.Duration(i) * time.Hour)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: job, Run: fmt.Sprintf("run-%d", i), RunCreatedAt: created,
			Pool: pool, Runner: runner, Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark:    protocol.Benchmark{Model: model, BatchSize: 8, LoopCount: 32, WarmupCount: 8, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit(i), Branch: branch},
			Measurements: protocol.Measurements{SamplesPerSec: sps}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
		if runner == "forge" {
			r.Benchmark.Test, r.Source.Wheels = test, wheels
		}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	// Six commits at 1000 samples/s, a branch run, then two regressed
	// commits, the first with two more attempts (its repeats); the same
	// on the sim runner.
	for i, sps := range []float64{1000, 1001, 999, 1000, 1002, 998, 1000, 800, 805} {
		put(fmt.Sprintf("j%015d", i), i, "n150", "forge", "resnet50", sps)
		put(fmt.Sprintf("s%015d", i), i, "sim", "sim", "simnet", sps)
	}
	for k, sps := range []float64{802, 798} {
		put(fmt.Sprintf("r%015d", k), 7, "n150", "forge", "resnet50", sps)
		put(fmt.Sprintf("q%015d", k), 7, "sim", "sim", "simnet", sps)
	}
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	hs := serve(t, ui.Config{JS: js, Topology: fleettest.Topology(t, js, topologyConfig()), Store: store})
	code, body := get(t, hs.URL+"/series?model=resnet50&pool=n150&batch=8&format=bfloat16&runner=forge&test="+url.QueryEscape(test))
	if code != 200 {
		t.Fatalf("series page: %d\n%s", code, body)
	}
	text := html.UnescapeString(body)
	// The branch run (6) is not on main: commit 5 is the last good one,
	// and 7 the oldest regressed commit after it.
	want := fmt.Sprintf("benchfleet results bisect --model resnet50 --batch-size 8 --data-format bfloat16 --pool n150 --runner forge --test '%s' --good %s --bad %s --mirror DIR",
		test, commit(5), commit(7))
	if !strings.Contains(text, want) {
		t.Errorf("the series page shows no\n%s\n%s", want, text)
	}
	if n := strings.Count(text, `class="bisect-cmd"`); n != 1 {
		t.Errorf("%d bisect commands on the page, want 1", n)
	}
	if !strings.Contains(text, "DIR: a clone of tenstorrent/tt-forge-onnx") {
		t.Errorf("the page does not say what DIR is")
	}
	code, body = get(t, hs.URL+"/series?model=simnet&pool=sim&batch=8&format=bfloat16&runner=sim")
	if code != 200 || !strings.Contains(body, "regression") {
		t.Fatalf("sim series page: %d, want one showing its regressions\n%s", code, body)
	}
	if strings.Contains(body, `class="bisect-cmd"`) {
		t.Errorf("the sim series (no wheels) offers a bisect")
	}
}
