package index

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// LoggedQuery is Query against b (through the Parquet index for
// compacted dates, the JSON results for the rest) that logs what the
// query met, as the command line's results commands do: index parts it
// could not use and results it could not decode are logged as
// warnings (their dates were read from JSON), what it read at debug level.
func LoggedQuery(ctx context.Context, b storage.Bucket, f Filter, log zerolog.Logger) ([]*protocol.Result, error) {
	rs, st, err := Query(ctx, b, f)
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
