//go:build unix

package fault

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchfleet/benchfleet/storage"
)

// CountingBucket wraps a Bucket and counts what happens to result keys, so
// a test can tell duplicate deliveries (fine: at-least-once) from duplicate
// results (never: exactly-once results).
type CountingBucket struct {
	storage.Bucket

	mu        sync.Mutex
	written   map[string]int
	conflicts int
	found     int
	inflight  atomic.Int64
}

// NewCountingBucket wraps b.
func NewCountingBucket(b storage.Bucket) *CountingBucket {
	return &CountingBucket{Bucket: b, written: map[string]int{}}
}

// Put implements storage.Bucket, counting conditional creates of result
// keys: those that wrote, and those refused with ErrExists.
func (c *CountingBucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	// A result is visible to readers before Put returns; Counts waits for
	// writes in flight so a just-visible result is counted.
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	err := c.Bucket.Put(ctx, key, r, opts...)
	if strings.HasPrefix(key, storage.PrefixResults) && storage.ApplyPutOptions(opts).IfAbsent {
		c.mu.Lock()
		switch {
		case err == nil:
			c.written[key]++
		case errors.Is(err, storage.ErrExists):
			c.conflicts++
		}
		c.mu.Unlock()
	}
	return err
}

// Exists implements storage.Bucket, counting result keys found already
// there (a duplicate delivery caught before running or uploading).
func (c *CountingBucket) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := c.Bucket.Exists(ctx, key)
	if ok && err == nil && strings.HasPrefix(key, storage.PrefixResults) {
		c.mu.Lock()
		c.found++
		c.mu.Unlock()
	}
	return ok, err
}

// Counts reports, for result keys: written maps each key to how many
// conditional creates wrote it (more than 1 would be a duplicate result);
// conflicts is how many were refused with ErrExists; found is how many
// existence checks found a result already there.
func (c *CountingBucket) Counts() (written map[string]int, conflicts, found int) {
	for deadline := time.Now().Add(10 * time.Second); c.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := make(map[string]int, len(c.written))
	for k, v := range c.written {
		w[k] = v
	}
	return w, c.conflicts, c.found
}
