package worker

import (
	"context"
	"fmt"

	"github.com/benchfleet/benchfleet/storage"
)

// recorded is the job path's check for an existing result of job in run,
// whatever the created_at it was published with: the key its marker names
// (storage.RecordedResultKey), else want (the key of this delivery's
// created_at). It returns that key and whether a result is there. Like
// exists, it does not ask a store known not to answer.
func (g *recordGate) recorded(ctx context.Context, run, job, want string) (string, bool, error) {
	if err := g.storeDown(); err != nil {
		return want, false, fmt.Errorf("%w (%w)", errStoreNotAsked, err)
	}
	key, err := storage.RecordedResultKey(ctx, g.store, run, job, want)
	if err != nil {
		g.observe(err)
		return want, false, err
	}
	found, err := g.exists(ctx, key)
	return key, found, err
}
