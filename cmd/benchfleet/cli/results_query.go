package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// queryStore opens --store, runs one results query and closes the store.
func (a *app) queryStore(ctx context.Context, f index.Filter) ([]*protocol.Result, error) {
	b, err := a.openStoreRead(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return a.query(ctx, b, f)
}

// query runs a results query against the store (index.LoggedQuery), logging
// what it read.
func (a *app) query(ctx context.Context, b storage.Bucket, f index.Filter) ([]*protocol.Result, error) {
	return index.LoggedQuery(ctx, b, f, a.log)
}

// resultsExtraCmds are the index, export, gate and compare subcommands.
func (a *app) resultsExtraCmds() []*cobra.Command {
	return append(append([]*cobra.Command{a.resultsCompactCmd(), a.resultsExportCmd()}, a.resultsGateCmds()...), a.resultsTrendCmds()...)
}
