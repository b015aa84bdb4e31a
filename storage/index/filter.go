package index

import (
	"context"
	"sort"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// Filter selects results. Zero fields match everything.
type Filter struct {
	Model  string
	Pool   string
	Run    string
	Job    string
	Commit string // a prefix of the commit hash matches
	Branch string
	Status protocol.Status
	// Since keeps results of runs created on or after this time; whole date
	// partitions before it are never read.
	Since time.Time
}

// Match reports whether r passes the filter.
func (f Filter) Match(r *protocol.Result) bool {
	return (f.Model == "" || r.Benchmark.Model == f.Model) &&
		(f.Pool == "" || r.Pool == f.Pool) &&
		(f.Run == "" || r.Run == f.Run) &&
		(f.Job == "" || r.Job == f.Job) &&
		(f.Commit == "" || hasPrefix(r.Source.Commit, f.Commit)) &&
		(f.Branch == "" || r.Source.Branch == f.Branch) &&
		(f.Status == "" || r.Status == f.Status) &&
		(f.Since.IsZero() || !r.RunCreatedAt.Before(f.Since))
}

// keepKey prunes by what a result key tells: its date partition, run and job.
func (f Filter) keepKey(date, run, job string) bool {
	if f.Run != "" && run != f.Run {
		return false
	}
	if f.Job != "" && job != f.Job {
		return false
	}
	if !f.Since.IsZero() && date < storage.DatePartition(f.Since) {
		return false
	}
	return true
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// QueryJSON scans the JSON results and returns those matching f, oldest run
// first, then by job id. Results that fail to decode are skipped and
// counted in the second return value.
func QueryJSON(ctx context.Context, b storage.Bucket, f Filter) ([]*protocol.Result, int, error) {
	var out []*protocol.Result
	bad := 0
	for r, err := range storage.ScanResults(ctx, b, f.keepKey) {
		if err != nil {
			if ctx.Err() != nil {
				return nil, bad, err
			}
			bad++
			continue
		}
		if f.Match(r) {
			out = append(out, r)
		}
	}
	SortResults(out)
	return out, bad, nil
}

// SortResults orders results by run creation time, run, then job.
func SortResults(rs []*protocol.Result) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if !a.RunCreatedAt.Equal(b.RunCreatedAt) {
			return a.RunCreatedAt.Before(b.RunCreatedAt)
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		return a.Job < b.Job
	})
}
