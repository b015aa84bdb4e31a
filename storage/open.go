package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/redact"
)

// Open opens the store named by rawURL:
//
//	file:///abs/path            a directory (a bare path works too)
//	s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true
//
// S3 credentials come from the standard AWS chain (AWS_* variables, shared
// files). Errors never contain credentials.
func Open(ctx context.Context, rawURL string, log zerolog.Logger) (Bucket, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("storage: no store given (set --store or BENCHFLEET_STORE)")
	}
	if !strings.Contains(rawURL, "://") {
		return NewFileBucket(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what went wrong.
		return nil, badURLError{redact.Error(fmt.Errorf("storage: store URL %q: %w", Redact(rawURL), redact.URLError(err)), redact.Secrets(rawURL)...)}
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, badURLError{fmt.Errorf("storage: file URL %q must be file:///absolute/path", Redact(rawURL))}
		}
		return NewFileBucket(u.Path)
	case "s3":
		return openS3(ctx, u, log)
	default:
		return nil, badURLError{fmt.Errorf("storage: store URL %q: unknown scheme %q (want file or s3)", Redact(rawURL), u.Scheme)}
	}
}

// ErrBadStoreURL is matched (errors.Is) by Open's error for a store URL
// that names no store it can open: a bad scheme, file URL, bucket, query
// or parameter. The URL's owner must fix it; retrying cannot help.
var ErrBadStoreURL = errors.New("storage: bad store URL")

// badURLError is an error of the store URL itself, with its own text.
type badURLError struct{ err error }

func (e badURLError) Error() string        { return e.err.Error() }
func (e badURLError) Unwrap() error        { return e.err }
func (e badURLError) Is(target error) bool { return target == ErrBadStoreURL }

// Redact removes user info (of the URL and of any URL in its query, such
// as endpoint=) and secret-looking query parameters from a URL so it can
// be logged or shown in an error. A URL that does not parse is shown with
// its user info removed as text.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return redact.Userinfo(rawURL)
	}
	if u.User != nil {
		u.User = url.User(redact.Mark)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return redact.Userinfo(rawURL)
	}
	for k, vs := range q {
		lk := strings.ToLower(k)
		secret := strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "password")
		for i, v := range vs {
			if secret {
				vs[i] = redact.Mark
			} else {
				vs[i] = redact.Userinfo(v)
			}
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
