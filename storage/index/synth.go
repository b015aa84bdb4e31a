package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// SynthOptions shape a synthetic result history (for benchmarks of the
// query path and tests; never for real data).
type SynthOptions struct {
	// Results is the number of results; 0 means 1000.
	Results int
	// Days spreads the runs over this many date partitions ending at End;
	// 0 means 365.
	Days int
	// JobsPerRun is the number of results per run; 0 means 16.
	JobsPerRun int
	// End is the creation date of the newest runs; zero means now.
	End time.Time
	// Seed varies the ids, so two histories can live in one store.
	Seed string
}

// Synthetic values: every model runs on every pool, a quarter of the runs
// on a branch other than main, one result in 20 failed.
var (
	synthModels   = []string{"resnet50", "resnet18", "mlp", "vit_b16", "bert_base", "yolov8", "unet", "llama_3b"}
	synthPools    = []string{"n150", "n300", "p150", "p300", "cpu", "sim"}
	synthBranches = []string{"main", "main", "main", "dev", "release-1", "main", "feature-x", "main"}
	synthFormats  = []string{"bfloat16", "float32"}
)

// SynthResult is the i-th result of a synthetic history: deterministic in
// i and o.
func SynthResult(i int, o SynthOptions) *protocol.Result {
	o = o.withDefaults()
	runN := i / o.JobsPerRun
	nRuns := (o.Results + o.JobsPerRun - 1) / o.JobsPerRun
	// Runs are spread evenly over the days, newest last.
	day := o.Days - 1 - (runN*o.Days)/max(nRuns, 1)
	created := o.End.UTC().Truncate(24*time.Hour).AddDate(0, 0, -day).
		Add(time.Duration(runN%24)*time.Hour + time.Duration(runN%60)*time.Minute + time.Duration(runN%997)*time.Millisecond)
	run := fmt.Sprintf("%s%s-%06d", o.Seed, created.Format("20060102"), runN)
	h := uint32(i)*2654435761 + uint32(runN)*40503
	model := synthModels[(i+runN)%len(synthModels)]
	pool := synthPools[(i/len(synthModels)+runN)%len(synthPools)]
	branch := synthBranches[runN%len(synthBranches)]
	format := synthFormats[(i/3)%len(synthFormats)]
	commit := fmt.Sprintf("%08x%032x", uint32(runN)*2246822519, uint64(runN)*0x9E3779B97F4A7C15)
	r := &protocol.Result{
		Schema: protocol.SchemaResult, Job: fmt.Sprintf("j%s%08d", o.Seed, i), Run: run, RunCreatedAt: created,
		Pool: pool, Runner: "sim", Status: protocol.StatusPassed, Attempt: 1 + int(h%7)/6,
		StartedAt: created.Add(time.Duration(i%o.JobsPerRun) * time.Minute),
		Worker:    protocol.WorkerRef{ID: fmt.Sprintf("tt-lab-%02d", h%12), Host: fmt.Sprintf("tt-lab-%02d.farm", h%12), Version: "v0.9.0"},
		Device:    protocol.DeviceRef{ID: fmt.Sprintf("%s-%d", pool, h%4), Pool: pool, Arch: "wormhole", Chips: 1, Firmware: "80.17.0"},
		Benchmark: protocol.Benchmark{
			Test:  "forge/test/benchmark/test_vision.py::test_" + model,
			Model: model, BatchSize: 1 << (h % 5), LoopCount: 128, WarmupCount: 32, DataFormat: format, InputSize: 224,
		},
		Source: protocol.Source{Project: "tt-forge/tt-forge-onnx", Repo: "https://github.com/tenstorrent/tt-forge-onnx",
			Commit: commit, Branch: branch},
		Phases: protocol.Phases{CompileS: 30 + float64(h%1000)/100, WarmupS: 2.5, TimingS: 9.75, PCCS: 0.5, UploadS: 0.125},
		PCC:    protocol.PCC{Value: 0.995 + float64(h%40)/10000, Min: 0.99, Passed: true},
		Labels: map[string]string{"trigger": "nightly", "sim.duration": "10s"},
	}
	perIter := 5 + float64(h%2000)/100
	r.Measurements = protocol.Measurements{
		TotalSamples: int64(r.Benchmark.BatchSize * r.Benchmark.LoopCount), TotalTimeS: perIter * 128 / 1000,
		IterationMS: protocol.IterationMS{Min: perIter * 0.9, P50: perIter, P90: perIter * 1.05, P99: perIter * 1.2,
			Max: perIter * 1.4, Mean: perIter * 1.01, Stddev: perIter * 0.03},
	}
	r.Measurements.SamplesPerSec = float64(r.Measurements.TotalSamples) / r.Measurements.TotalTimeS
	r.FinishedAt = r.StartedAt.Add(time.Duration((r.Phases.CompileS + 13) * float64(time.Second)))
	r.Upstream = storage.ArtifactKey(run, r.Job, r.Attempt, "report.json")
	r.Artifacts = []protocol.Artifact{{Name: "log.txt", Key: storage.ArtifactKey(run, r.Job, r.Attempt, "log.txt"), Size: int64(h % 100000),
		SHA256: fmt.Sprintf("%064x", h)}}
	if h%20 == 7 {
		r.Status = protocol.StatusFailed
		r.PCC.Value, r.PCC.Passed = 0.91, false
		r.Error = &protocol.ResultError{Class: protocol.ClassBenchmark, Message: "PCC 0.91 below required 0.99"}
	}
	return r
}

func (o SynthOptions) withDefaults() SynthOptions {
	if o.Results <= 0 {
		o.Results = 1000
	}
	if o.Days <= 0 {
		o.Days = 365
	}
	if o.JobsPerRun <= 0 {
		o.JobsPerRun = 16
	}
	if o.End.IsZero() {
		o.End = time.Now()
	}
	return o
}

// WriteSynth writes the synthetic history o to b, in parallel. Into a
// bucket of local files (storage.LocalDir: the file provider) it writes the
// files directly (no fsync: this is test data), to any other bucket through
// Put.
func WriteSynth(ctx context.Context, b storage.Bucket, o SynthOptions) error {
	o = o.withDefaults()
	fb, direct := storage.As[storage.LocalDir](b)
	made := map[string]bool{}
	if direct {
		// Create the run folders up front, once each.
		for i := 0; i < o.Results; i += o.JobsPerRun {
			r := SynthResult(i, o)
			dir := filepath.Dir(filepath.Join(fb.Root(), filepath.FromSlash(storage.ResultKey(r.RunCreatedAt, r.Run, r.Job))))
			if !made[dir] {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				made[dir] = true
			}
		}
	}
	const chunk = 256
	workers := 2 * runtime.GOMAXPROCS(0)
	if !direct {
		workers = 16 // a remote store: the time is the round trips
	}
	return parallel(ctx, (o.Results+chunk-1)/chunk, workers, func(c int) error {
		for i := c * chunk; i < min((c+1)*chunk, o.Results); i++ {
			r := SynthResult(i, o)
			key := storage.ResultKey(r.RunCreatedAt, r.Run, r.Job)
			data, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				return err
			}
			if direct {
				if err := os.WriteFile(filepath.Join(fb.Root(), filepath.FromSlash(key)), data, 0o644); err != nil {
					return err
				}
				continue
			}
			if err := b.Put(ctx, key, bytes.NewReader(data), storage.ContentType("application/json")); err != nil {
				return err
			}
		}
		return nil
	})
}
