package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/benchfleet/benchfleet/protocol"
)

// PutResult writes r at its result key once. A second write of the same
// job's result returns ErrExists and changes nothing: results are
// write-once, which turns at-least-once delivery into exactly-once results.
//
// Either way it then leaves the result's late marker if the date is already
// compacted (layout_index.go; the protocol is in storage/index's seal.go),
// and until that is done it returns the marker's error, not nil or
// ErrExists, so the caller retries.
func PutResult(ctx context.Context, b Bucket, r *protocol.Result) (string, error) {
	key := ResultKey(r.RunCreatedAt, r.Run, r.Job)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return key, fmt.Errorf("storage: encode result %s: %w", r.Job, err)
	}
	opts := []PutOption{ContentType("application/json"), Size(int64(len(data)))}
	err = b.Put(ctx, key, bytes.NewReader(data), append(opts, IfAbsent())...)
	if errors.Is(err, ErrExists) {
		// Refused, yet nothing there: what an interrupted write left.
		there, xerr := b.Exists(ctx, key)
		if xerr != nil {
			return key, fmt.Errorf("storage: result %s: %w", r.Job, xerr)
		}
		if !there {
			sum := sha256.Sum256(data)
			err = overRemnant(ctx, b, key, hex.EncodeToString(sum[:]), func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(data)), nil
			}, opts...)
		}
	}
	if err != nil && !errors.Is(err, ErrExists) {
		return key, err
	}
	if lerr := noteLate(ctx, b, key); lerr != nil {
		return key, lerr
	}
	return key, err
}

// GetJSON reads the object at key and decodes it into v.
func GetJSON(ctx context.Context, b Bucket, key string, v any) error {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("storage: read %q: %w", key, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("storage: decode %q: %w", key, err)
	}
	return nil
}

// PutJSON writes v as indented JSON at key.
func PutJSON(ctx context.Context, b Bucket, key string, v any, opts ...PutOption) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("storage: encode %q: %w", key, err)
	}
	opts = append(opts, ContentType("application/json"), Size(int64(len(data))))
	return b.Put(ctx, key, bytes.NewReader(data), opts...)
}

// ReadResult reads and decodes the result at key.
func ReadResult(ctx context.Context, b Bucket, key string) (*protocol.Result, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("storage: read %q: %w", key, err)
	}
	r, err := protocol.DecodeResult(data)
	if err != nil {
		return nil, fmt.Errorf("storage: result %q: %w", key, err)
	}
	return r, nil
}

// ScanResults yields every JSON result under results/v1/ whose key passes
// keep (nil keeps all), in key order. keep sees the date, run and job of the
// key, so callers prune by partition before any object is read. Objects that
// fail to decode are yielded as errors naming the key; the scan goes on.
func ScanResults(ctx context.Context, b Bucket, keep func(date, run, job string) bool) iter.Seq2[*protocol.Result, error] {
	return func(yield func(*protocol.Result, error) bool) {
		for key, err := range b.List(ctx, PrefixResults) {
			if err != nil {
				yield(nil, err)
				return
			}
			date, run, job, ok := ResultKeyParts(key)
			if !ok || (keep != nil && !keep(date, run, job)) {
				continue
			}
			r, err := ReadResult(ctx, b, key)
			if errors.Is(err, ErrNotFound) {
				continue // deleted between list and get
			}
			if !yield(r, err) {
				return
			}
		}
	}
}
