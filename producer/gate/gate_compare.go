package gate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// ErrNoResults matches a run with no results in the store.
var ErrNoResults = errors.New("no results in the store")

// CompareRuns reads the results of runs a and b through query and
// compares them (Compare). A run id that is not one is a
// *protocol.FieldError; a run without results is ErrNoResults.
func CompareRuns(ctx context.Context, query HistoryFunc, a, b string) (Comparison, error) {
	for _, run := range []string{a, b} {
		if err := protocol.ValidID("run", run); err != nil {
			return Comparison{}, err
		}
	}
	var sets [2][]*protocol.Result
	for i, run := range []string{a, b} {
		rs, err := query(ctx, index.Filter{Run: run})
		if err != nil {
			return Comparison{}, err
		}
		if len(rs) == 0 {
			return Comparison{}, fmt.Errorf("run %q: %w", run, ErrNoResults)
		}
		sets[i] = rs
	}
	return Compare(sets[0], sets[1]), nil
}

// CompareRow is one series present in two runs: its samples/sec in run A
// and run B (the median of the passed results of the series in each run)
// and the relative change from A to B.
type CompareRow struct {
	Model      string  `json:"model"`
	Pool       string  `json:"pool"`
	Runner     string  `json:"runner"`
	Test       string  `json:"test,omitempty"`
	BatchSize  int     `json:"batch_size"`
	DataFormat string  `json:"data_format"`
	A          float64 `json:"a"`
	B          float64 `json:"b"`
	// Change is (B - A) / A; null when either run has no passed result of
	// the series.
	Change  *float64        `json:"change"`
	AStatus protocol.Status `json:"a_status"`
	BStatus protocol.Status `json:"b_status"`
}

// Comparison is the result of comparing two runs.
type Comparison struct {
	Rows []CompareRow
	// OnlyA and OnlyB are the series present in one run only.
	OnlyA, OnlyB []Series
}

// Compare matches the results of two runs by series. A series with several
// results in one run (e.g. jobs that differ only by labels) is represented
// by the median of its passed results; its status is passed when any
// passed, else the status of its first result.
func Compare(a, b []*protocol.Result) Comparison {
	ga, oa := GroupSeries(a)
	gb, ob := GroupSeries(b)
	var c Comparison
	for _, s := range oa {
		if _, inB := gb[s]; !inB {
			c.OnlyA = append(c.OnlyA, s)
			continue
		}
		va, sa := seriesValue(ga[s])
		vb, sb := seriesValue(gb[s])
		row := CompareRow{Model: s.Model, Pool: s.Pool, Runner: s.Runner, Test: s.Test, BatchSize: s.BatchSize,
			DataFormat: s.DataFormat, A: va, B: vb, AStatus: sa, BStatus: sb}
		if va > 0 && vb > 0 {
			ch := (vb - va) / va
			row.Change = &ch
		}
		c.Rows = append(c.Rows, row)
	}
	for _, s := range ob {
		if _, ok := ga[s]; !ok {
			c.OnlyB = append(c.OnlyB, s)
		}
	}
	return c
}

// GroupSeries groups results by series; order lists the series sorted by
// model, pool, batch size, data format, runner and test.
func GroupSeries(rs []*protocol.Result) (map[Series][]*protocol.Result, []Series) {
	g := map[Series][]*protocol.Result{}
	var order []Series
	for _, r := range rs {
		s := SeriesOf(r)
		if _, ok := g[s]; !ok {
			order = append(order, s)
		}
		g[s] = append(g[s], r)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		switch {
		case a.Model != b.Model:
			return a.Model < b.Model
		case a.Pool != b.Pool:
			return a.Pool < b.Pool
		case a.BatchSize != b.BatchSize:
			return a.BatchSize < b.BatchSize
		case a.DataFormat != b.DataFormat:
			return a.DataFormat < b.DataFormat
		case a.Runner != b.Runner:
			return a.Runner < b.Runner
		default:
			return a.Test < b.Test
		}
	})
	return g, order
}

func seriesValue(rs []*protocol.Result) (float64, protocol.Status) {
	var vals []float64
	for _, r := range rs {
		if r.Status == protocol.StatusPassed && r.Measurements.SamplesPerSec > 0 {
			vals = append(vals, r.Measurements.SamplesPerSec)
		}
	}
	if len(vals) == 0 {
		if len(rs) == 0 {
			return 0, ""
		}
		return 0, rs[0].Status
	}
	return runstate.Median(vals), protocol.StatusPassed
}
