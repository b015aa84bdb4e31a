// Package storage is the core of benchfleet's object store, which the
// providers and every other package import: the Bucket interface (with its
// errors, wrappers and optional capabilities) and the result layout on top
// of it (keys, write-once Deliver of results and artifacts, job markers,
// run manifests). The providers are storage/file and storage/s3
// (storage/storeurl opens one from a URL); the outage spool is
// storage/spool, the Parquet index and queries storage/index.
package storage

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"
)

// Sentinel errors. Backends translate their own errors to these at the
// boundary so callers never see an SDK or syscall type.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrExists: Put with IfAbsent found the key already there.
	ErrExists = errors.New("storage: already exists")
	// ErrInvalidKey: the key is empty, absolute, or escapes its folder.
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrUnavailable: the store could not be reached (network, server down).
	// Callers may spool and retry later.
	ErrUnavailable = errors.New("storage: unavailable")
)

// Bucket is a flat key space of immutable-ish objects, shaped after objstore.
//
// Keys are slash-separated relative paths without "." or ".." segments.
// Implementations are safe for concurrent use.
type Bucket interface {
	// Get opens the object at key. It returns ErrNotFound if it is missing.
	// The caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Put stores r at key. With IfAbsent(), a Put of an existing key returns
	// ErrExists and leaves the object unchanged; the check and the write are
	// one atomic step. Readers never see a partial object.
	Put(ctx context.Context, key string, r io.Reader, opts ...PutOption) error
	// Exists reports whether key exists.
	Exists(ctx context.Context, key string) (bool, error)
	// List yields the keys under prefix (a plain string prefix, not only a
	// folder) in sorted order. The error, if any, is yielded last.
	List(ctx context.Context, prefix string) iter.Seq2[string, error]
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Attributes returns size and modification time, or ErrNotFound.
	Attributes(ctx context.Context, key string) (Attributes, error)
	// Close releases resources.
	Close() error
}

// Attributes describe a stored object.
type Attributes struct {
	Size         int64
	LastModified time.Time
}

// PutOption modifies one Put.
type PutOption func(*PutOptions)

// PutOptions are the settings a PutOption changes. Backends read them with
// ApplyPutOptions.
type PutOptions struct {
	// IfAbsent makes Put a conditional create (ErrExists when present).
	IfAbsent bool
	// ContentType is recorded where the backend supports it.
	ContentType string
	// Size is the length of the reader when known (-1 unknown); backends may
	// use it to choose a single or a multipart upload.
	Size int64
}

// IfAbsent makes Put fail with ErrExists when the key already exists.
func IfAbsent() PutOption { return func(o *PutOptions) { o.IfAbsent = true } }

// ContentType sets the object's content type.
func ContentType(ct string) PutOption { return func(o *PutOptions) { o.ContentType = ct } }

// Size tells the backend the reader's length.
func Size(n int64) PutOption { return func(o *PutOptions) { o.Size = n } }

// ApplyPutOptions folds opts into a PutOptions.
func ApplyPutOptions(opts []PutOption) PutOptions {
	o := PutOptions{Size: -1}
	for _, f := range opts {
		f(&o)
	}
	return o
}
