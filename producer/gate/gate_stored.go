package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// ErrNoRun matches a run the store knows nothing of: no manifest and no
// results.
var ErrNoRun = errors.New("no manifest and no results in the store")

// StoredManifest is run's manifest from the store b (nil: none), else one
// rebuilt from the run's results rs (ManifestFromResults). A run with
// neither is ErrNoRun.
func StoredManifest(ctx context.Context, b storage.Bucket, run string, rs []*protocol.Result) (*protocol.RunManifest, error) {
	if b != nil {
		var m protocol.RunManifest
		err := storage.GetJSON(ctx, b, storage.ManifestKey(run), &m)
		switch {
		case err == nil && m.Run == run:
			return &m, nil
		case err == nil:
			return nil, fmt.Errorf("run %s: the stored manifest names run %q", run, m.Run)
		case !errors.Is(err, storage.ErrNotFound):
			return nil, err
		}
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("run %q: %w", run, ErrNoRun)
	}
	return ManifestFromResults(run, rs), nil
}
