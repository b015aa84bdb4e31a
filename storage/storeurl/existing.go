package storeurl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/storage"
)

// ErrNoStore matches OpenExisting's error for a file store whose folder
// does not exist.
var ErrNoStore = errors.New("storage: no such store")

// OpenExisting opens the store named by rawURL as Open does, for a caller
// that only reads it: a file store's folder must exist already (Open
// creates it, as a worker or a submitter needs, which would make a
// mistyped --store an empty store with 0 results). Its error then matches
// ErrNoStore. S3 stores are opened as Open opens them.
func OpenExisting(ctx context.Context, rawURL string, log zerolog.Logger) (storage.Bucket, error) {
	if dir, ok := fileStoreDir(rawURL); ok {
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s: the folder %s does not exist (a command that only reads never creates a store; is --store or BENCHFLEET_STORE the one the workers write to?)",
				ErrNoStore, storage.Redact(rawURL), dir)
		case err != nil:
			return nil, fmt.Errorf("storage: store %s: %w", storage.Redact(rawURL), err)
		case !st.IsDir():
			return nil, fmt.Errorf("%w: %s: %s is not a folder", ErrNoStore, storage.Redact(rawURL), dir)
		}
	}
	return Open(ctx, rawURL, log)
}

// fileStoreDir is the folder of a file store URL (file:///dir or a bare
// path); ok is false for other URLs and for those Open rejects.
func fileStoreDir(rawURL string) (dir string, ok bool) {
	if rawURL == "" {
		return "", false
	}
	if !strings.Contains(rawURL, "://") {
		return rawURL, true
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	return u.Path, true
}
