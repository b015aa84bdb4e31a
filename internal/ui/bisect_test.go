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
)

// A regressed row of a series page shows the bisect command of its
// regression: good is the newest older commit of the baseline branch the
// gate did not judge a regression, bad the row's own; rows that are no
// regression show none.
func TestSeriesRowShowsItsBisect(t *testing.T) {
	t.Parallel()
	store, err := storage.NewFileBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const test = "forge/test/benchmark/test_vision.py::test_resnet50[resnet_50_hf]"
	commit := func(i int) string { return fmt.Sprintf("%02d%038x", i, 0xbeef) }
	base := time.Now().UTC().Add(-48 * time.Hour)
	// Six commits at 1000 samples/s, a branch run, then two regressed commits.
	for i, sps := range []float64{1000, 1001, 999, 1000, 1002, 998, 1000, 800, 805} {
		branch := "main"
		if i == 6 {
			branch = "feature/x"
		}
		run := fmt.Sprintf("run-%d", i)
		created := base.Add(time.Duration(i) * time.Hour)
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: fmt.Sprintf("j%015d", i), Run: run, RunCreatedAt: created,
			Pool: "n150", Runner: "forge", Status: protocol.StatusPassed, Attempt: 1, StartedAt: created, FinishedAt: created.Add(time.Second),
			Benchmark:    protocol.Benchmark{Test: test, Model: "resnet50", BatchSize: 8, LoopCount: 32, WarmupCount: 8, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit(i), Branch: branch},
			Measurements: protocol.Measurements{SamplesPerSec: sps}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	hs := serve(t, ui.Config{JS: js, Topology: fleettest.Topology(t, js, topologyConfig()), Store: store})
	code, body := get(t, hs.URL+"/series?model=resnet50&pool=n150&batch=8&format=bfloat16&runner=forge&test="+url.QueryEscape(test))
	if code != 200 {
		t.Fatalf("series page: %d\n%s", code, body)
	}
	text := html.UnescapeString(body)
	want := func(bad int) string {
		return fmt.Sprintf("benchfleet results bisect --model resnet50 --batch 8 --format bfloat16 --pool n150 --runner forge --test '%s' --good %s --bad %s --mirror DIR",
			test, commit(5), commit(bad))
	}
	// The branch run (6) is not on main: commit 5 is the last good one of
	// both regressions; the first regression (7) is no good one for the
	// second (8).
	for _, bad := range []int{7, 8} {
		if !strings.Contains(text, want(bad)) {
			t.Errorf("the series page shows no\n%s\n%s", want(bad), text)
		}
	}
	if n := strings.Count(text, `class="bisect-cmd"`); n != 2 {
		t.Errorf("%d bisect commands on the page, want the 2 regressed rows'", n)
	}
	if !strings.Contains(text, "DIR: a clone of tenstorrent/tt-forge-onnx") {
		t.Errorf("the page does not say what DIR is")
	}
}
