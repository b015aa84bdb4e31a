package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// boardWindow is how far back the fleet table counts a board's jobs: the
// window of a board's health counts (protocol.HealthWindow).
const boardWindow = protocol.HealthWindow

// maxBoardLookback bounds how old a date partition the tally lists for the
// results of long-running runs.
const maxBoardLookback = 7 * 24 * time.Hour

// boardKey names one board of one worker.
type boardKey struct{ Worker, Device string }

// boardCounts are the results one board recorded in the store over the
// last boardWindow.
type boardCounts struct {
	// Done counts the board's results (every status).
	Done int
	// Failed counts those that did not pass: failed, error or timeout
	// (not cancelled).
	Failed int
}

// boardTally counts the boards' results from the store. A worker's own
// counters (protocol.DeviceStatus.Done) start at zero when it restarts; the
// stored results do not. Results are write-once, so each is read once and
// remembered by key until its date partition leaves the window.
type boardTally struct {
	mu   sync.Mutex
	seen map[string]tallied // by result key
}

// tallied is what the tally keeps of one result.
type tallied struct {
	board    boardKey
	status   protocol.Status
	finished time.Time
	// replaceable: a dead letter's result, which a later attempt (dlq
	// retry) replaces: read again each time.
	replaceable bool
}

// count returns, by board, the results finished after now-boardWindow. It
// lists the date partitions (runs' creation dates) from the earlier of
// that and from, at most maxBoardLookback back, to today, and reads only
// the results it has not read before.
func (t *boardTally) count(ctx context.Context, b storage.Bucket, now, from time.Time) (map[boardKey]boardCounts, error) {
	since := now.Add(-boardWindow)
	if from.IsZero() || from.After(since) {
		from = since
	}
	from = maxTime(from, now.Add(-maxBoardLookback))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]tallied{}
	}
	listed := map[string]bool{}
	var fresh []string
	for d := from.UTC().Truncate(24 * time.Hour); !d.After(now); d = d.Add(24 * time.Hour) {
		prefix := storage.PrefixResults + "date=" + storage.DatePartition(d) + "/"
		for key, err := range b.List(ctx, prefix) {
			if err != nil {
				return nil, fmt.Errorf("board counts: list %s: %w", prefix, err)
			}
			if _, _, _, ok := storage.ResultKeyParts(key); !ok {
				continue
			}
			listed[key] = true
			if tl, ok := t.seen[key]; !ok || tl.replaceable {
				fresh = append(fresh, key)
			}
		}
	}
	for key := range t.seen {
		if !listed[key] {
			delete(t.seen, key)
		}
	}
	read, err := readTallied(ctx, b, fresh)
	if err != nil {
		return nil, err
	}
	for i, key := range fresh {
		t.seen[key] = read[i]
	}
	out := map[boardKey]boardCounts{}
	for _, e := range t.seen {
		if e.board.Worker == "" || e.finished.Before(since) {
			continue
		}
		c := out[e.board]
		c.Done++
		switch e.status {
		case protocol.StatusPassed, protocol.StatusCancelled:
		default:
			c.Failed++
		}
		out[e.board] = c
	}
	return out, nil
}

// readTallied reads the results at keys, a few at a time. A result that
// does not decode counts for no board.
func readTallied(ctx context.Context, b storage.Bucket, keys []string) ([]tallied, error) {
	out := make([]tallied, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, key := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rc, err := b.Get(ctx, key)
			if errors.Is(err, storage.ErrNotFound) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				errs[i] = fmt.Errorf("read %s: %w", key, err)
				return
			}
			if r, err := protocol.DecodeResult(data); err == nil {
				out[i] = tallied{board: boardKey{r.Worker.ID, r.Device.ID}, status: r.Status, finished: r.FinishedAt, replaceable: r.DeadLettered()}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("board counts: %w", err)
	}
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
