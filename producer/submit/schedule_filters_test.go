package submit

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// A run's history is read with one filtered query per (pool, model) pair,
// per pool past maxHistoryQueries pairs, and unfiltered only past as many
// pools: never one query of every result for a run over two pools.
func TestHistoryFiltersPerPoolAndModel(t *testing.T) {
	t.Parallel()
	since := time.Now()
	job := func(pool, model string) *protocol.Job {
		return &protocol.Job{Pool: pool, Benchmark: protocol.Benchmark{Model: model}}
	}
	jobs := []*protocol.Job{job("a", "m1"), job("b", "m1"), job("a", "m2"), job("a", "m1")}
	fs := historyFilters(jobs, since)
	want := []index.Filter{{Pool: "a", Model: "m1"}, {Pool: "b", Model: "m1"}, {Pool: "a", Model: "m2"}}
	if len(fs) != len(want) {
		t.Fatalf("filters %+v, want one per pair %+v", fs, want)
	}
	for i, f := range fs {
		if f.Pool != want[i].Pool || f.Model != want[i].Model || f.Status != protocol.StatusPassed || !f.Since.Equal(since) {
			t.Errorf("filter %d: %+v, want pool %s model %s, passed, since", i, f, want[i].Pool, want[i].Model)
		}
	}
	var many []*protocol.Job
	for i := range maxHistoryQueries + 1 {
		many = append(many, job("a", fmt.Sprint("m", i)), job("b", fmt.Sprint("m", i)))
	}
	if fs := historyFilters(many, since); len(fs) != 2 || fs[0].Pool != "a" || fs[1].Pool != "b" || fs[0].Model != "" {
		t.Errorf("%d pairs over 2 pools: filters %+v, want one per pool", 2*(maxHistoryQueries+1), fs)
	}
	var pools []*protocol.Job
	for i := range maxHistoryQueries + 1 {
		for k := range 2 {
			pools = append(pools, job(fmt.Sprint("p", i), fmt.Sprint("m", k)))
		}
	}
	if fs := historyFilters(pools, since); len(fs) != 1 || fs[0].Pool != "" || fs[0].Model != "" {
		t.Errorf("%d pools: filters %+v, want one of every pool", maxHistoryQueries+1, fs)
	}
}
