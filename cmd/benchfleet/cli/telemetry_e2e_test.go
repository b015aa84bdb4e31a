package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/recordtest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/export"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

// A forge job on a board whose hwmon values move during the run (the fake
// board draws 50 W in the warmup, 100+i W in timed iteration i) has a
// Result whose telemetry follows those values over its 2-second timed loop;
// `results export` of the run, submitted from a GitHub Actions run,
// validates as CompleteBenchmarkRun with the report's model, device_info
// and config, the pipeline id and link and device_power from telemetry;
// `results query --format json` and the Parquet index carry the telemetry.
func TestTelemetryFollowsTheBoardAndReachesExportAndIndex(t *testing.T) {
	t.Setenv("GITHUB_RUN_ID", "987654321")
	t.Setenv("GITHUB_SERVER_URL", "https://github.com")
	t.Setenv("GITHUB_REPOSITORY", "tenstorrent/tt-forge-onnx")
	t.Setenv("GITHUB_SHA", "")

	srv := fleettest.Server(t)
	dir := t.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	storeURL := "file://" + dir
	host := harnesstest.NewTTHost(t, 1)
	dcfg := device.DiscoverConfig{TTSMI: host.TTSMI, DevRoot: host.DevRoot, SysRoot: host.Sys}
	devs, err := device.Discover(t.Context(), dcfg)
	if err != nil || len(devs) != 1 {
		t.Fatalf("discover: %v %+v", err, devs)
	}
	ck := harnesstest.NewCheckout(t, "forge", "", false)
	k, _ := device.Lookup(protocol.RunnerForge)
	r, err := k.New(device.Settings{Workdir: ck.Workdir, Python: ck.Python, TempDir: t.TempDir(),
		Env: map[string]string{"FAKE_SYSFS": host.Sys, "FAKE_ITER_MS": "100"},
		// The fake board's sensors move as its harness runs: the test's
		// side channel into the fake sysfs, through the box's walls.
		Box: box.Config{Writable: []string{host.Sys}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	devs[0].Runner = protocol.RunnerForge
	nc, js := fleettest.Connect(t, srv.ClientURL())
	tc := topology.Config{AckWait: 10 * time.Second}
	fleettest.Topology(t, js, tc)
	fleettest.StartWorker(t, worker.Config{ID: "tt-telemetry", Conn: nc, Store: store, AckWait: tc.AckWait, IdlePoll: 100 * time.Millisecond,
		Slots: []worker.Slot{{Device: devs[0], Runner: r, Health: device.NewTTHealth(dcfg), Sampler: device.NewTTSampler(dcfg)}},
		Log:   zerolog.Nop()})

	code, out, errOut := run(t, "submit", "--nats", srv.ClientURL(), "--store", storeURL, "--pool", "n150", "--runner", "forge",
		"--test", harnesstest.ForgeResNet50, "--model", "resnet50", "--batch-size", "4", "--loop-count", "20", "--warmup-count", "4",
		"--run", "telemetry-1", "--project", "tt-forge/tt-forge-onnx", "--wait", "--timeout", "2m", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}

	// results query --format json carries the telemetry.
	code, out, errOut = run(t, "results", "query", "--store", storeURL, "--run", "telemetry-1", "--format", "json")
	if code != 0 {
		t.Fatalf("query: exit %d: %s", code, errOut)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("query: %v %s", err, out)
	}
	res := rs[0]
	tm := res.Telemetry
	if tm == nil || tm.Samples < 3 || tm.PowerW == nil || tm.TemperatureC == nil {
		t.Fatalf("telemetry %+v over a %.2fs timed loop: want >= 3 samples with power and temperature", tm, res.Phases.TimingS)
	}
	// Only timed-loop readings: 100..119 W, 60..69.5 °C (the warmup's 50 W
	// and 45 °C stay out).
	p, c := tm.PowerW, tm.TemperatureC
	if p.Min < 100 || p.Max > 119 || p.Min >= p.Max || p.Mean <= p.Min || p.Mean >= p.Max ||
		c.Min < 60 || c.Max > 69.5 || c.Min >= c.Max {
		t.Fatalf("telemetry power %+v temperature %+v does not follow the board's values in the timed loop", p, c)
	}
	t.Logf("telemetry over a %.2fs timed loop: %d samples, power %+v W, temperature %+v C", res.Phases.TimingS, tm.Samples, *p, *c)
	if res.Source.CIRunID != 987654321 || res.Report == nil || res.Report.Model != "onnx_resnet_resnet_50_hf_cv_image_cls_hf" {
		t.Fatalf("source %+v report %+v", res.Source, res.Report)
	}

	// The export validates as CompleteBenchmarkRun and maps the facts.
	outDir := filepath.Join(t.TempDir(), "export") + "/"
	code, out, errOut = run(t, "results", "export", "--store", storeURL, "--run", "telemetry-1", "--out", outDir)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(outDir, "benchmark_987654321_*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("export files %v (%s), want benchmark_987654321_<time>.jsonl", files, out)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recordtest.Validate(t, data)
	var rec export.BenchmarkRun
	if err := json.Unmarshal(bytes.TrimSpace(data), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.MLModelName != "onnx_resnet_resnet_50_hf_cv_image_cls_hf" || *rec.GithubPipelineID != 987654321 ||
		*rec.GithubPipelineLink != "https://github.com/tenstorrent/tt-forge-onnx/actions/runs/987654321" {
		t.Fatalf("record %s", data)
	}
	for _, key := range []string{"device_name", "arch", "device_count", "device_type"} {
		if _, ok := rec.DeviceInfo[key]; !ok || len(rec.DeviceInfo) != 4 {
			t.Fatalf("device_info %v, want the report's four keys", rec.DeviceInfo)
		}
	}
	if rec.ConfigParams["optimization_level"] != 2.0 || rec.ConfigParams["warmup_iterations"] != 4.0 {
		t.Fatalf("config_params %v, want the report's config", rec.ConfigParams)
	}
	for _, m := range rec.Measurements {
		if m.DevicePower == nil || *m.DevicePower != p.Mean {
			t.Fatalf("measurement %s device_power %v, want the telemetry mean %v", m.Name, m.DevicePower, p.Mean)
		}
	}

	// The Parquet index carries it in flat columns.
	if code, out, errOut = run(t, "results", "compact", "--store", storeURL); code != 0 {
		t.Fatalf("compact: exit %d %s%s", code, out, errOut)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "index", "v1", "date=*", "part-*.parquet"))
	if len(parts) != 1 {
		t.Fatalf("index parts %v", parts)
	}
	pdata, _ := os.ReadFile(parts[0])
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(t.Context(), bytes.NewReader(pdata), parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	col := func(name string) *array.Float64 {
		return tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunk(0).(*array.Float64)
	}
	if v := col("power_w_mean"); v.IsNull(0) || v.Value(0) != p.Mean {
		t.Fatalf("power_w_mean in the index: %v, want %v", v, p.Mean)
	}
	if v := col("temperature_c_max"); v.IsNull(0) || v.Value(0) != c.Max {
		t.Fatalf("temperature_c_max in the index: %v, want %v", v, c.Max)
	}
	if !strings.Contains(out, "compacted") {
		t.Logf("compact said: %s", out)
	}
}
