package storage

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/rs/zerolog"
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
		return nil, fmt.Errorf("storage: store URL %q: %w", Redact(rawURL), err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("storage: file URL %q must be file:///absolute/path", Redact(rawURL))
		}
		return NewFileBucket(u.Path)
	case "s3":
		return openS3(ctx, u, log)
	default:
		return nil, fmt.Errorf("storage: store URL %q: unknown scheme %q (want file or s3)", Redact(rawURL), u.Scheme)
	}
}

// Redact removes user info and secret-looking query parameters from a URL so
// it can be logged.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparseable url>"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	q := u.Query()
	for k := range q {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "password") {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
