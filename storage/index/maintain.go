package index

import (
	"context"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/storage"
)

// MaintainReport says what Maintain did.
type MaintainReport struct {
	CompactStats
	// StaleTemps is the number of stale temporary files removed (file
	// stores only); TempsErr why they could not be, if so.
	StaleTemps int
	TempsErr   error
	// Took is how long Maintain ran.
	Took time.Duration
}

// Maintain brings b's index up to date (Compact with opts); on a store
// whose writes may leave temporary files (storage.StaleTempRemover: the
// file provider) it first removes those older than the provider's default
// age (an hour: file.StaleTempAge) that writes killed midway left (never
// keys; nothing else removes them).
func Maintain(ctx context.Context, b storage.Bucket, opts CompactOptions) (*MaintainReport, error) {
	start := time.Now()
	rep := &MaintainReport{}
	if tr, ok := storage.As[storage.StaleTempRemover](b); ok {
		rep.StaleTemps, rep.TempsErr = tr.RemoveStaleTemps(ctx, 0)
	}
	var err error
	rep.CompactStats, err = Compact(ctx, b, opts)
	rep.Took = time.Since(start)
	return rep, err
}

// String is the report in one line, e.g. "compacted 2 of 30 date
// partitions (512 rows written, 28 current, 1 stale parts removed) in 1.2s".
func (r *MaintainReport) String() string {
	extra := ""
	if r.Sealed > 0 {
		extra += fmt.Sprintf(", %d sealed", r.Sealed)
	}
	if r.LateCleared > 0 {
		extra += fmt.Sprintf(", %d late results folded in", r.LateCleared)
	}
	switch {
	case r.StaleTemps == 1:
		extra += ", 1 stale temporary file removed"
	case r.StaleTemps > 1:
		extra += fmt.Sprintf(", %d stale temporary files removed", r.StaleTemps)
	}
	return fmt.Sprintf("compacted %d of %d date partitions (%d rows written, %d current%s, %d stale parts removed) in %s",
		r.Written, r.Partitions, r.Rows, r.Current, extra, r.Removed, r.Took.Round(time.Millisecond))
}
