package cli

import (
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// query runs a results query against the store.
func (a *app) query(cmd *cobra.Command, b storage.Bucket, f storage.Filter) ([]*protocol.Result, error) {
	rs, bad, err := storage.QueryJSON(cmd.Context(), b, f)
	if bad > 0 {
		a.log.Warn().Int("unreadable", bad).Msg("some result objects could not be decoded and were skipped")
	}
	return rs, err
}

// resultsExtraCmds are the index, export and gate subcommands.
func (a *app) resultsExtraCmds() []*cobra.Command { return nil }
