package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// CallTimeoutMinRate is the slowest transfer WithCallTimeout allows a Put:
// a Put of n bytes gets the call timeout plus n at this rate (1 MiB/s), so
// a large artifact on a slow but working store is not taken for a hung one.
const CallTimeoutMinRate = 1 << 20

// errCallTimeout is the cause of a call WithCallTimeout ended.
var errCallTimeout = errors.New("storage: call timeout")

// WithCallTimeout wraps b so that every call has at most d to answer (a
// Put of n bytes d plus n at CallTimeoutMinRate; a Get d to its first
// byte, the body then bounded by the caller's ctx), whatever the caller's
// ctx allows. A call that runs out of that time fails with an error
// matching ErrUnavailable ("no answer within d"): a store that accepts
// connections and never answers is treated like one that is down. The
// answers ErrNotFound and ErrExists are passed as they are. List is bounded
// by the caller's ctx only (a listing has no bounded length). The wrapper
// keeps keys as they are and implements Wrapper. d <= 0 returns b.
func WithCallTimeout(b Bucket, d time.Duration) Bucket {
	if d <= 0 {
		return b
	}
	return &timedBucket{b: b, d: d}
}

type timedBucket struct {
	b Bucket
	d time.Duration
}

func (t *timedBucket) Unwrap() Bucket { return t.b }

// call runs fn under a ctx that ends after budget and translates its
// running out of time.
func (t *timedBucket) call(ctx context.Context, budget time.Duration, op, key string, fn func(context.Context) error) error {
	cctx, cancel := context.WithTimeoutCause(ctx, budget, errCallTimeout)
	defer cancel()
	return t.timedOut(ctx, cctx, budget, op, key, fn(cctx))
}

// timedOut replaces err by ErrUnavailable when the call's own time ran
// out (not the caller's).
func (t *timedBucket) timedOut(ctx, cctx context.Context, budget time.Duration, op, key string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || ctx.Err() != nil ||
		!errors.Is(context.Cause(cctx), errCallTimeout) {
		return err
	}
	return fmt.Errorf("storage: %s %q: %w: no answer within %s", op, key, ErrUnavailable, budget)
}

func (t *timedBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(t.d, func() { cancel(errCallTimeout) })
	rc, err := t.b.Get(cctx, key)
	if !timer.Stop() && err == nil {
		// The answer came as the time ran out: the body would fail.
		rc.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		err = t.timedOut(ctx, cctx, t.d, OpGet, key, err)
		cancel(nil)
		return nil, err
	}
	return &timedBody{ReadCloser: rc, cancel: func() { cancel(nil) }}, nil
}

// timedBody releases the Get's ctx on Close.
type timedBody struct {
	io.ReadCloser
	cancel func()
}

func (r *timedBody) Close() error {
	err := r.ReadCloser.Close()
	r.cancel()
	return err
}

func (t *timedBucket) Put(ctx context.Context, key string, r io.Reader, opts ...PutOption) error {
	budget := t.d
	if n := ApplyPutOptions(opts).Size; n > 0 {
		budget += time.Duration(float64(n) / CallTimeoutMinRate * float64(time.Second))
	}
	return t.call(ctx, budget, OpPut, key, func(ctx context.Context) error { return t.b.Put(ctx, key, r, opts...) })
}

func (t *timedBucket) Exists(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := t.call(ctx, t.d, OpExists, key, func(ctx context.Context) (err error) {
		ok, err = t.b.Exists(ctx, key)
		return err
	})
	return ok, err
}

func (t *timedBucket) Attributes(ctx context.Context, key string) (Attributes, error) {
	var a Attributes
	err := t.call(ctx, t.d, OpAttributes, key, func(ctx context.Context) (err error) {
		a, err = t.b.Attributes(ctx, key)
		return err
	})
	return a, err
}

func (t *timedBucket) Delete(ctx context.Context, key string) error {
	return t.call(ctx, t.d, OpDelete, key, func(ctx context.Context) error { return t.b.Delete(ctx, key) })
}

func (t *timedBucket) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return t.b.List(ctx, prefix)
}

func (t *timedBucket) Close() error { return t.b.Close() }
