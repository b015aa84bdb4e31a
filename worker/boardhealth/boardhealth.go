// Package boardhealth is a Tenstorrent board's lasting health, its record
// in the bench-health bucket (protocol.DeviceHealth): its quarantine,
// which survives a worker restart until an operator releases it
// (`benchfleet fleet release WORKER DEVICE`), and its history of outcomes,
// resets and quarantines. It reads a board's record (Load), stores its
// snapshots off the slot's path (Writer) and follows the releases
// (WatchReleases). The worker decides what goes into the record.
package boardhealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Load reads the record of worker's board dev (of pool) from kv, the
// bench-health bucket. A board without one, or whose record cannot be read
// or decoded (logged), starts with an empty history.
func Load(ctx context.Context, kv jetstream.KeyValue, worker, dev, pool string, log zerolog.Logger) *protocol.DeviceHealth {
	h := &protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: worker, Device: dev, Pool: pool}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := kv.Get(gctx, protocol.HealthKey(worker, dev))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		log.Warn().Err(err).Msg("board health not read; starting with an empty history")
	default:
		if err := json.Unmarshal(e.Value(), h); err != nil {
			log.Warn().Err(err).Msg("board health record unreadable; starting with an empty history")
			h = &protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: worker, Device: dev, Pool: pool}
		}
	}
	return h
}

// Writer stores a board's health record off the slot's path. Each
// snapshot is the whole record, so only the newest matters: Store hands it
// over and returns; one goroutine at a time writes the newest snapshot
// until none is newer, so a burst of events costs one write and writes
// never land out of order. Wait returns once a given snapshot (or a newer
// one) is stored.
type Writer struct {
	put func([]byte)

	mu      sync.Mutex
	cond    *sync.Cond
	latest  []byte
	version uint64 // snapshots handed in
	written uint64 // the newest stored
	running bool
}

// NewWriter returns a Writer that stores each snapshot with put (which
// logs its own failures).
func NewWriter(put func([]byte)) *Writer {
	h := &Writer{put: put}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// Store hands in a snapshot and returns its version.
func (h *Writer) Store(data []byte) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version++
	h.latest = data
	if !h.running {
		h.running = true
		go h.write()
	}
	return h.version
}

func (h *Writer) write() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.written < h.version {
		data, v := h.latest, h.version
		h.mu.Unlock()
		h.put(data)
		h.mu.Lock()
		h.written = v
		h.cond.Broadcast()
	}
	h.running = false
}

// Wait returns once snapshot v or a newer one is stored (or its write
// failed: the failure is logged by put).
func (h *Writer) Wait(v uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.written < v {
		h.cond.Wait()
	}
}

// Flush waits until every snapshot handed in so far is stored.
func (h *Writer) Flush() {
	h.mu.Lock()
	v := h.version
	h.mu.Unlock()
	h.Wait(v)
}

// WatchReleases calls released with a board's key (protocol.HealthKey)
// each time an operator releases one of worker's boards: its record in kv
// is no longer quarantined, or is deleted. It returns once the watch is
// made; the watch runs until ctx ends, its goroutine counted in wg.
func WatchReleases(ctx context.Context, kv jetstream.KeyValue, worker string, wg *sync.WaitGroup, released func(key string)) error {
	wa, err := kv.Watch(ctx, worker+".*", jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch %s: %w", protocol.BucketHealth, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer wa.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-wa.Updates():
				if !ok {
					return
				}
				if e != nil && isRelease(e) {
					released(e.Key())
				}
			}
		}
	}()
	return nil
}

// isRelease reports whether e is an operator's release: the record's last
// event is a release (`benchfleet fleet release`), or the record
// was deleted. The worker's own writes (a reset recorded just before a
// quarantine, say) are not releases.
func isRelease(e jetstream.KeyValueEntry) bool {
	if e.Operation() != jetstream.KeyValuePut {
		return true
	}
	var h protocol.DeviceHealth
	return json.Unmarshal(e.Value(), &h) == nil && !h.Quarantined &&
		len(h.Events) > 0 && h.Events[len(h.Events)-1].Kind == protocol.HealthRelease
}

// Kind is the history kind of a job's failure (nil: a pass).
func Kind(failure error) string {
	if failure == nil {
		return protocol.HealthPass
	}
	if device.IsHang(failure) { // a timeout is a hang too
		return protocol.HealthHang
	}
	return protocol.HealthInfra
}
