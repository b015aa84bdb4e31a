package ui

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// defaultManifestTTL is how long the dashboard reuses a bench-runs entry
// (a manifest, a cancel flag) it read, when Config.ManifestTTL is 0.
const defaultManifestTTL = 2 * time.Second

// maxCachedKeys bounds the cache: beyond it, it starts over.
const maxCachedKeys = 10000

// kvCache is a bench-runs bucket whose Get answers (an entry, or "no such
// key") are reused for ttl, so that pages reloading every few seconds do
// not re-read every manifest each time. A write through it (Put, Create,
// Update, Delete, Purge) forgets the key at once. Everything else is the
// bucket's.
type kvCache struct {
	jetstream.KeyValue
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	by  map[string]kvCached
}

type kvCached struct {
	at    time.Time
	entry jetstream.KeyValueEntry
	err   error // nil or jetstream.ErrKeyNotFound
}

func newKVCache(kv jetstream.KeyValue, ttl time.Duration, now func() time.Time) *kvCache {
	if now == nil {
		now = time.Now
	}
	return &kvCache{KeyValue: kv, ttl: ttl, now: now, by: map[string]kvCached{}}
}

// Unwrap is the bucket under the cache.
func (c *kvCache) Unwrap() jetstream.KeyValue { return c.KeyValue }

// Get implements jetstream.KeyValue, from the cache when the key was read
// less than ttl ago.
func (c *kvCache) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.by[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.entry, e.err
	}
	entry, err := c.KeyValue.Get(ctx, key)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return entry, err
	}
	c.mu.Lock()
	if len(c.by) >= maxCachedKeys {
		clear(c.by)
	}
	c.by[key] = kvCached{at: now, entry: entry, err: err}
	c.mu.Unlock()
	return entry, err
}

func (c *kvCache) forget(key string) {
	c.mu.Lock()
	delete(c.by, key)
	c.mu.Unlock()
}

// Put implements jetstream.KeyValue and forgets key.
func (c *kvCache) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	defer c.forget(key)
	return c.KeyValue.Put(ctx, key, value)
}

// PutString implements jetstream.KeyValue and forgets key.
func (c *kvCache) PutString(ctx context.Context, key string, value string) (uint64, error) {
	defer c.forget(key)
	return c.KeyValue.PutString(ctx, key, value)
}

// Create implements jetstream.KeyValue and forgets key.
func (c *kvCache) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	defer c.forget(key)
	return c.KeyValue.Create(ctx, key, value, opts...)
}

// Update implements jetstream.KeyValue and forgets key.
func (c *kvCache) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	defer c.forget(key)
	return c.KeyValue.Update(ctx, key, value, revision)
}

// Delete implements jetstream.KeyValue and forgets key.
func (c *kvCache) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	defer c.forget(key)
	return c.KeyValue.Delete(ctx, key, opts...)
}

// Purge implements jetstream.KeyValue and forgets key.
func (c *kvCache) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	defer c.forget(key)
	return c.KeyValue.Purge(ctx, key, opts...)
}
