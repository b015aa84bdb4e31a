package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// queryStore opens --store, runs one results query and closes the store.
func (a *app) queryStore(ctx context.Context, f storage.Filter) ([]*protocol.Result, error) {
	b, err := a.openStoreRead(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return a.query(ctx, b, f)
}

// query runs a results query against the store: through the Parquet index
// for compacted dates, the JSON results for the rest (storage.Query). Index
// parts it could not use are logged; their dates were read from JSON.
func (a *app) query(ctx context.Context, b storage.Bucket, f storage.Filter) ([]*protocol.Result, error) {
	rs, st, err := storage.Query(ctx, b, f)
	for _, w := range st.Warnings {
		a.log.Warn().Str("component", "query").Msg(w + "; read its date from JSON instead (repair: benchfleet results compact --force)")
	}
	if st.Bad > 0 {
		a.log.Warn().Int("unreadable", st.Bad).Msg("some result objects could not be decoded and were skipped")
	}
	a.log.Debug().Str("component", "query").Int("partitions", st.Partitions).Int("from_index", st.IndexPartitions).
		Int("parts", st.PartsRead).Int("index_rows", st.IndexRows).Int("docs", st.DocsDecoded).
		Int("json_read", st.JSONRead).Int("results", len(rs)).Msg("query")
	return rs, err
}

// resultsExtraCmds are the index, export, gate and compare subcommands.
func (a *app) resultsExtraCmds() []*cobra.Command {
	return append(append([]*cobra.Command{a.resultsCompactCmd(), a.resultsExportCmd()}, a.resultsGateCmds()...), a.resultsTrendCmds()...)
}
