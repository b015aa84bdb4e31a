package cli

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

// hiddenFlags adds the global flags --help does not list: knobs for tests.
func (a *app) hiddenFlags(pf *pflag.FlagSet) {
	pf.DurationVar(&a.resultGrace, "result-grace", watch.DefaultResultGrace,
		"how long a waiter waits for the result of a job reported ended before it warns that the worker may write to another store")
	_ = pf.MarkHidden("result-grace")
	pf.DurationVar(&a.servicePoll, "service-poll", watch.DefaultServicePoll,
		"how often a waiter reads the fleet to say when a pool of its run has no board in service")
	_ = pf.MarkHidden("service-poll")
}

// openStore opens --store, creating a file store that does not exist yet
// (the worker's, submit's).
func (a *app) openStore(ctx context.Context) (storage.Bucket, error) {
	if a.storeURL == "" {
		return nil, usageErr("no result store: give --store URL or set BENCHFLEET_STORE")
	}
	b, err := storeurl.Open(ctx, a.storeURL, a.log)
	if errors.Is(err, storage.ErrBadStoreURL) {
		return nil, usageErr("--store: %v", err)
	}
	return b, err
}

// openStoreRead opens --store for a command that only reads it (queries,
// reports, runs show and watch, the dashboard): a file store that does not
// exist is a usage error naming it, not a new empty store (openStore, for
// the worker and submit, creates it).
func (a *app) openStoreRead(ctx context.Context) (storage.Bucket, error) {
	if a.storeURL == "" {
		return nil, usageErr("no result store: give --store URL or set BENCHFLEET_STORE")
	}
	b, err := storeurl.OpenExisting(ctx, a.storeURL, a.log)
	if errors.Is(err, storeurl.ErrNoStore) || errors.Is(err, storage.ErrBadStoreURL) {
		return nil, usageErr("--store: %v", err)
	}
	return b, err
}
