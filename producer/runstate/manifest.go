package runstate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// GetManifest reads a run's manifest from the bench-runs bucket, with its
// jobs (from the chunks of a big run). A value that does not decode or
// fails protocol.RunManifest.CheckRead (another run's name, counts out of
// bounds, chunks that disagree with their header) is a *BadManifestError;
// jobs of the last chunk beyond the header's job_count are an append the
// header does not name yet (Confirmer.Requeue's) and are not read;
// a missing run is jetstream.ErrKeyNotFound.
func GetManifest(ctx context.Context, runs jetstream.KeyValue, run string) (*protocol.RunManifest, error) {
	e, err := fleet.GetKey(ctx, runs, protocol.ManifestKey(run))
	if err != nil {
		return nil, err
	}
	var m protocol.RunManifest
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, &BadManifestError{Run: run, Err: err}
	}
	// Anyone who may write bench-runs may write any value there: nothing
	// is sized from the header before it is checked.
	if err := m.CheckRead(run); err != nil {
		return nil, &BadManifestError{Run: run, Err: err}
	}
	if m.Chunks <= 0 {
		return &m, nil
	}
	for i := 0; i < m.Chunks; i++ {
		ce, err := fleet.GetKey(ctx, runs, protocol.ManifestChunkKey(run, i))
		if err != nil {
			return nil, fmt.Errorf("run %s: manifest chunk %d: %w", run, i, err)
		}
		var jobs []protocol.ManifestJob
		if err := json.Unmarshal(ce.Value(), &jobs); err != nil {
			return nil, &BadManifestError{Run: run, Err: fmt.Errorf("chunk %d: %w", i, err)}
		}
		if rest := m.JobCount - len(m.Jobs); i == m.Chunks-1 && len(jobs) > rest && len(jobs) <= protocol.ManifestChunkJobs {
			jobs = jobs[:rest] // the rest is an append its header does not count yet
		}
		if len(jobs) > protocol.ManifestChunkJobs || len(m.Jobs)+len(jobs) > m.JobCount {
			return nil, &BadManifestError{Run: run, Err: fmt.Errorf("chunk %d: %d jobs, more than its header's job_count %d allows", i, len(jobs), m.JobCount)}
		}
		for _, j := range jobs {
			if err := protocol.ValidID("jobs[].id", j.ID); err != nil {
				return nil, &BadManifestError{Run: run, Err: fmt.Errorf("chunk %d: %w", i, err)}
			}
		}
		m.Jobs = append(m.Jobs, jobs...)
	}
	if len(m.Jobs) != m.JobCount {
		return nil, &BadManifestError{Run: run, Err: fmt.Errorf("%d jobs in %d chunks, its header says %d", len(m.Jobs), m.Chunks, m.JobCount)}
	}
	m.Chunks, m.JobCount = 0, 0
	return &m, nil
}
