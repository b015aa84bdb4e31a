package storage

import (
	"context"
	"io"
	"iter"
	"time"
)

// Wrapper is a Bucket that wraps another and keeps its keys as they are
// (metrics, counting, logging). Unwrap returns the wrapped bucket, so the
// optional capabilities of a backend (partition stamps and folder listing
// of the file store, the index's fast paths) are found through any chain
// of wrappers (As), as errors.Unwrap finds a wrapped error. A wrapper that
// rewrites keys (a prefix) must not implement Wrapper: the wrapped
// bucket's capabilities speak of other keys.
type Wrapper interface {
	Bucket
	Unwrap() Bucket
}

// Operations an Observer sees.
const (
	OpGet        = "get"
	OpPut        = "put"
	OpExists     = "exists"
	OpList       = "list"
	OpDelete     = "delete"
	OpAttributes = "attributes"
)

// Observer is told of every operation of an observed bucket: its name
// (Op*), its error (nil on success; ErrNotFound and ErrExists are answers,
// not failures, and are passed as they are) and how long it took. It must
// be safe for concurrent use and quick.
type Observer func(op string, err error, d time.Duration)

// Observe wraps b so that obs sees each operation (for metrics, or to count
// the requests a query makes). The wrapper implements Wrapper.
func Observe(b Bucket, obs Observer) Bucket { return &observed{b: b, obs: obs} }

type observed struct {
	b   Bucket
	obs Observer
}

func (o *observed) Unwrap() Bucket { return o.b }

func (o *observed) done(op string, start time.Time, err error) { o.obs(op, err, time.Since(start)) }

func (o *observed) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := o.b.Get(ctx, key)
	o.done(OpGet, start, err)
	return rc, err
}

func (o *observed) Put(ctx context.Context, key string, r io.Reader, opts ...PutOption) error {
	start := time.Now()
	err := o.b.Put(ctx, key, r, opts...)
	o.done(OpPut, start, err)
	return err
}

func (o *observed) Exists(ctx context.Context, key string) (bool, error) {
	start := time.Now()
	ok, err := o.b.Exists(ctx, key)
	o.done(OpExists, start, err)
	return ok, err
}

func (o *observed) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		start := time.Now()
		var last error
		for k, err := range o.b.List(ctx, prefix) {
			if err != nil {
				last = err
			}
			if !yield(k, err) {
				break
			}
		}
		o.done(OpList, start, last)
	}
}

func (o *observed) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := o.b.Delete(ctx, key)
	o.done(OpDelete, start, err)
	return err
}

func (o *observed) Attributes(ctx context.Context, key string) (Attributes, error) {
	start := time.Now()
	a, err := o.b.Attributes(ctx, key)
	o.done(OpAttributes, start, err)
	return a, err
}

func (o *observed) Close() error { return o.b.Close() }
