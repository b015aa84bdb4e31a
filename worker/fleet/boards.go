package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// Errors of ReleaseBoard.
var (
	// ErrUnknownBoard: bench-health has no record of that worker's device.
	ErrUnknownBoard = errors.New("no such board in bench-health (only Tenstorrent boards are kept there; built-in cpu and sim slots are never quarantined)")
	// ErrNotQuarantined: the board is in service already.
	ErrNotQuarantined = errors.New("board is not quarantined")
)

// ReleaseBoard returns a quarantined board to service: its bench-health
// record is marked released (a compare-and-set on the record's revision,
// so a concurrent change is not lost). The worker, watching the bucket,
// checks the board and takes jobs on it again. The history is kept.
func ReleaseBoard(ctx context.Context, kv jetstream.KeyValue, worker, dev string) (*protocol.DeviceHealth, error) {
	key := protocol.HealthKey(worker, dev)
	for range 5 {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("release %s %s: %w", worker, dev, ErrUnknownBoard)
		}
		if err != nil {
			return nil, fmt.Errorf("release %s %s: %w", worker, dev, err)
		}
		var h protocol.DeviceHealth
		if err := json.Unmarshal(e.Value(), &h); err != nil {
			return nil, fmt.Errorf("release %s %s: unreadable record: %w", worker, dev, err)
		}
		if !h.Quarantined {
			return &h, fmt.Errorf("release %s %s: %w", worker, dev, ErrNotQuarantined)
		}
		h.Quarantined, h.Reason, h.Since = false, "", time.Time{}
		h.Record(protocol.HealthEvent{Time: time.Now().UTC(), Kind: protocol.HealthRelease})
		data, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		if _, err := kv.Update(ctx, key, data, e.Revision()); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) { // changed meanwhile: read again
				continue
			}
			return nil, fmt.Errorf("release %s %s: %w", worker, dev, err)
		}
		return &h, nil
	}
	return nil, fmt.Errorf("release %s %s: the record keeps changing; try again", worker, dev)
}

// Flagging thresholds of FlagBoards.
const (
	flagMinFailures = 3   // failures in the window before a board can be flagged
	flagMinRate     = 0.2 // and a failure rate of at least this
	flagFactor      = 3.0 // and at least this times the rest of its pool's rate
)

// FlagBoards sets DeviceStatus.Flag on boards whose failure rate over the
// health window is far above their pool's: at least 3 failures (hangs and
// infrastructure failures), a rate of at least 20%, and at least 3 times
// the rate of the pool's other boards (or 50% when the board is the only
// one with jobs). Such a board is worth pulling before it wastes a night of
// jobs, even while its health check passes.
func FlagBoards(sts []protocol.WorkerStatus) {
	type sum struct{ jobs, failures int }
	pools := map[string]sum{}
	for _, st := range sts {
		if st.Lost {
			continue
		}
		for _, d := range st.Devices {
			if d.Health != nil {
				p := pools[d.Pool]
				p.jobs += d.Health.Jobs
				p.failures += d.Health.Infra + d.Health.Hangs
				pools[d.Pool] = p
			}
		}
	}
	for i := range sts {
		if sts[i].Lost {
			continue
		}
		for j := range sts[i].Devices {
			d := &sts[i].Devices[j]
			h := d.Health
			if h == nil || h.Jobs == 0 {
				continue
			}
			f := h.Infra + h.Hangs
			rate := float64(f) / float64(h.Jobs)
			rest := pools[d.Pool]
			rest.jobs -= h.Jobs
			rest.failures -= f
			if f < flagMinFailures || rate < flagMinRate {
				continue
			}
			if rest.jobs == 0 {
				if rate >= 0.5 {
					d.Flag = fmt.Sprintf("%d of %d jobs failed in %s (%.0f%%); no other %s board to compare", f, h.Jobs, window(h), 100*rate, d.Pool)
				}
				continue
			}
			restRate := float64(rest.failures) / float64(rest.jobs)
			if rate >= flagFactor*restRate {
				d.Flag = fmt.Sprintf("%d of %d jobs failed in %s (%.0f%%) vs %.0f%% on the other %s boards", f, h.Jobs, window(h), 100*rate, 100*restRate, d.Pool)
			}
		}
	}
}

func window(h *protocol.HealthCounts) string {
	return time.Duration(h.WindowS * float64(time.Second)).String()
}
