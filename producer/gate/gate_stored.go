package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// ErrNoRun matches a run the store knows nothing of: no manifest and no
// results.
var ErrNoRun = errors.New("no manifest and no results in the store")

// StoredManifest reads a run's manifest from the store, or rebuilds it
// from the run's results rs (ManifestFromResults). A run with neither is
// ErrNoRun.
func StoredManifest(ctx context.Context, b storage.Bucket, run string, rs []*protocol.Result) (*protocol.RunManifest, error) {
	var m protocol.RunManifest
	err := storage.GetJSON(ctx, b, storage.ManifestKey(run), &m)
	switch {
	case err == nil && m.Run == run:
		return &m, nil
	case err == nil:
		return nil, fmt.Errorf("run %s: the stored manifest names run %q", run, m.Run)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	case len(rs) == 0:
		return nil, fmt.Errorf("run %q: %w", run, ErrNoRun)
	}
	return ManifestFromResults(run, rs), nil
}

// Query runs a results query against b: through the Parquet index for
// compacted dates, the JSON results for the rest (index.Query). Index
// parts it could not use and results it could not decode are logged as
// warnings (their dates were read from JSON), what it read at debug level.
func Query(ctx context.Context, b storage.Bucket, f index.Filter, log zerolog.Logger) ([]*protocol.Result, error) {
	rs, st, err := index.Query(ctx, b, f)
	for _, w := range st.Warnings {
		log.Warn().Str("component", "query").Msg(w + "; read its date from JSON instead (repair: benchfleet results compact --force)")
	}
	if st.Bad > 0 {
		log.Warn().Int("unreadable", st.Bad).Msg("some result objects could not be decoded and were skipped")
	}
	log.Debug().Str("component", "query").Int("partitions", st.Partitions).Int("from_index", st.IndexPartitions).
		Int("parts", st.PartsRead).Int("index_rows", st.IndexRows).Int("docs", st.DocsDecoded).
		Int("json_read", st.JSONRead).Int("results", len(rs)).Msg("query")
	return rs, err
}
