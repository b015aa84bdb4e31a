// Package storeurl opens a store from its URL: it chooses the provider the
// URL names (storage/file for a folder, storage/s3 for a bucket) and opens
// it. It sits above the providers so that none of them imports another.
package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/redact"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/s3"
)

// Open opens the store named by rawURL:
//
//	file:///abs/path            a directory (a bare path works too)
//	s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true
//
// S3 credentials come from the standard AWS chain (AWS_* variables, shared
// files). Errors never contain credentials; an error of the URL itself
// matches storage.ErrBadStoreURL.
func Open(ctx context.Context, rawURL string, log zerolog.Logger) (storage.Bucket, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("storage: no store given (set --store or BENCHFLEET_STORE)")
	}
	if !strings.Contains(rawURL, "://") {
		return file.NewBucket(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what went wrong.
		return nil, storage.BadURL(redact.Error(fmt.Errorf("storage: store URL %q: %w", storage.Redact(rawURL), redact.URLError(err)), redact.Secrets(rawURL)...))
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, storage.BadURL(fmt.Errorf("storage: file URL %q must be file:///absolute/path", storage.Redact(rawURL)))
		}
		return file.NewBucket(u.Path)
	case "s3":
		return s3.OpenURL(ctx, u, log)
	default:
		return nil, storage.BadURL(fmt.Errorf("storage: store URL %q: unknown scheme %q (want file or s3)", storage.Redact(rawURL), u.Scheme))
	}
}
