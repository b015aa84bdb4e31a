package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchfleet/benchfleet/protocol"
)

// Results are written once, with one exception: the error result a dead
// letter leaves (protocol.Result.DeadLettered) yields to the result of a
// later attempt of the same job, which a deliberate re-queue (`dlq retry`)
// produces (protocol.Result.Supersedes). Deliver then replaces it: it drops
// the index parts of the result's date (a part would otherwise answer a
// query with the dead letter's result: its name follows the date's result
// keys, which do not change), deletes the dead letter's result and writes
// the new one with a conditional create, so of two deliveries racing to
// replace it one writes and the other finds ErrExists. Compact rebuilds
// the date's part later.

// supersede deletes the result stored at key when r supersedes it, and
// reports whether r may now be written there (also when the result is gone
// already).
func supersede(ctx context.Context, b Bucket, key string, r *protocol.Result) (bool, error) {
	old, err := ReadResult(ctx, b, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return true, nil
	case errors.Is(err, ErrUnavailable):
		return false, fmt.Errorf("storage: read the stored result %s: %w", r.Job, err)
	case err != nil:
		return false, nil // unreadable: final like any other
	case !r.Supersedes(old):
		return false, nil
	}
	if err := dropIndexParts(ctx, b, key); err != nil {
		return false, err
	}
	if err := b.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
		return false, fmt.Errorf("storage: replace the dead letter's result %s: %w", r.Job, err)
	}
	return true, nil
}
