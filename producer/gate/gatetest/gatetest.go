// Package gatetest is the test kit of the gate's tests and of the
// packages that render its verdicts: results of a series made to
// measure, a run with confirmation repeats, a history read from a slice.
package gatetest

import (
	"context"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// Around is n values spread evenly over c ± c·spread.
func Around(c, spread float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = c * (1 + spread*(float64(2*i-(n-1))/float64(n-1)))
	}
	return out
}

// HistResult is a passed result of run for model on branch, created at
// created, measuring sps samples/s.
func HistResult(run, model, branch string, created time.Time, sps float64) *protocol.Result {
	return &protocol.Result{Schema: protocol.SchemaResult, Job: "j-" + run + "-" + model, Run: run, RunCreatedAt: created,
		Pool: "sim", Runner: "sim", Status: protocol.StatusPassed,
		Benchmark:    protocol.Benchmark{Model: model, BatchSize: 4, LoopCount: 10, WarmupCount: 10, DataFormat: "bfloat16"},
		Source:       protocol.Source{Branch: branch, Commit: "c-" + run},
		Measurements: protocol.Measurements{SamplesPerSec: sps}, FinishedAt: created.Add(time.Minute)}
}

// RunWithRepeats is run pr-7 with one job measuring value and a
// confirmation repeat per value of repeats (0: the repeat has no result).
func RunWithRepeats(created time.Time, value float64, repeats ...float64) (*protocol.RunManifest, []*protocol.Result) {
	const cell = "pool=sim runner=sim test= model=net batch=4 loop=10 warmup=0 format=bfloat16 training=false input=0 timeout=0s pcc_min=0 source=\"\""
	m := &protocol.RunManifest{Schema: protocol.SchemaManifest, Run: "pr-7", CreatedAt: created,
		Jobs: []protocol.ManifestJob{{ID: "j0", Pool: "sim", Runner: "sim", Model: "net", BatchSize: 4, DataFormat: "bfloat16", Cell: cell}}}
	res := func(id string, v float64, dev string) *protocol.Result {
		r := HistResult("pr-7", "net", "feature", created, v)
		r.Job, r.Worker.ID, r.Device.ID = id, "w1", dev
		return r
	}
	rs := []*protocol.Result{res("j0", value, "d0")}
	for k, v := range repeats {
		id := runstate.RepeatID("pr-7", cell, k+1)
		m.Jobs = append(m.Jobs, protocol.ManifestJob{ID: id, Pool: "sim", Runner: "sim", Model: "net", BatchSize: 4,
			DataFormat: "bfloat16", Repeat: k + 1, Of: "j0"})
		if v > 0 {
			rs = append(rs, res(id, v, fmt.Sprintf("d%d", k+1)))
		}
	}
	return m, rs
}

// HistoryOf reads a series' history from hist (a gate.HistoryFunc).
func HistoryOf(hist []*protocol.Result) func(context.Context, index.Filter) ([]*protocol.Result, error) {
	return func(_ context.Context, f index.Filter) ([]*protocol.Result, error) {
		var out []*protocol.Result
		for _, r := range hist {
			if f.Match(r) {
				out = append(out, r)
			}
		}
		return out, nil
	}
}
