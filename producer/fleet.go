package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// ReadFleet returns the live workers' statuses (the bench-workers bucket;
// a worker that stopped heartbeating has expired from it), sorted by id.
func ReadFleet(ctx context.Context, workers jetstream.KeyValue) ([]protocol.WorkerStatus, error) {
	lister, err := workers.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	out := []protocol.WorkerStatus{}
	for k := range lister.Keys() {
		e, err := workers.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fleet status %s: %w", k, err)
		}
		var st protocol.WorkerStatus
		if json.Unmarshal(e.Value(), &st) == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UnservedPools returns the pools of jobs (sorted, each once) that no live
// worker of fleet serves with a usable device: jobs for them wait in the
// queue until such a worker starts. A draining worker and a quarantined
// device serve nothing.
func UnservedPools(fleet []protocol.WorkerStatus, jobs []protocol.ManifestJob) []string {
	served := map[string]bool{}
	for _, w := range fleet {
		if w.Draining {
			continue
		}
		for _, d := range w.Devices {
			if d.State != protocol.DeviceQuarantined {
				served[d.Pool] = true
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, j := range jobs {
		if !served[j.Pool] && !seen[j.Pool] {
			seen[j.Pool] = true
			out = append(out, j.Pool)
		}
	}
	sort.Strings(out)
	return out
}
