package storage

import (
	"context"
	"io"
	"time"
)

// As returns the first bucket of b's Unwrap chain (Wrapper) that
// implements T, b itself first, as errors.As finds a wrapped error. T is
// a provider's concrete type (*file.Bucket, *s3.Bucket) or one of the
// optional capabilities below.
func As[T any](b Bucket) (T, bool) {
	for b != nil {
		if t, ok := b.(T); ok {
			return t, true
		}
		w, ok := b.(Wrapper)
		if !ok {
			break
		}
		b = w.Unwrap()
	}
	var zero T
	return zero, false
}

// Optional capabilities a provider may have beside Bucket. Callers find
// them with As, so they hold through any chain of wrappers.

// FolderLister is implemented by buckets that can name the folders
// directly under a folder prefix (ending in "/") in one cheap call (a
// directory read, a listing with the delimiter "/"). The index then lists
// only the date partitions a query wants.
type FolderLister interface {
	// ListFolders returns the names (without the prefix or a trailing
	// "/") of the folders directly under prefix, in any order; none when
	// prefix holds nothing.
	ListFolders(ctx context.Context, prefix string) ([]string, error)
}

// StaleTempRemover is implemented by buckets whose Puts leave temporary
// files behind when the writing process is killed midway (the file
// provider): RemoveStaleTemps deletes those last modified more than
// olderThan ago (the provider's default age when olderThan <= 0) and says
// how many it removed. Temporary files are never keys.
type StaleTempRemover interface {
	RemoveStaleTemps(ctx context.Context, olderThan time.Duration) (int, error)
}

// LocalDir is implemented by buckets whose object at key k is the plain
// file Root()/k (the file provider). Writers of bulk test data may write
// such files directly, skipping the Put's durability; nothing else should.
type LocalDir interface {
	Root() string
}

// ContextReader returns a reader of r that fails with ctx's error once
// ctx is done, so a provider's copy of a Put's body stops with its ctx.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
