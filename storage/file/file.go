// Package file is the storage provider on a local folder: one file per
// key under a root directory, written durably and atomically (a
// temporary file synced, then renamed or linked into place). It
// implements storage.Bucket and its optional capabilities (FolderLister,
// StaleTempRemover, LocalDir).
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/storage"
)

// Bucket stores objects as files under a root directory. Puts write a
// temporary file, make it durable, and rename (or hard-link for IfAbsent)
// it into place, then make the new name durable, so readers never see
// partial objects, conditional creates are atomic on one host, and a Put
// that returned survives a crash. On Linux both steps are group commits
// (one syncfs(2) of the store's file system shared by every Put waiting at
// that moment: concurrent slots pay one flush between them); elsewhere each
// Put fsyncs its file and its directory.
type Bucket struct {
	root  string
	group *groupSync // nil: fsync per Put
}

var (
	_ storage.Bucket           = (*Bucket)(nil)
	_ storage.FolderLister     = (*Bucket)(nil)
	_ storage.StaleTempRemover = (*Bucket)(nil)
	_ storage.LocalDir         = (*Bucket)(nil)
)

// NewBucket opens (and creates) a file bucket rooted at dir.
func NewBucket(dir string) (*Bucket, error) {
	if dir == "" {
		return nil, fmt.Errorf("storage: file bucket: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: file bucket %q: %w", dir, err)
	}
	// A bucket made here is the worker's own (0700): a harness run as
	// another user cannot read or plant results. An existing folder keeps
	// its mode (the operator's to choose).
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("storage: file bucket %q: %w", dir, err)
	}
	b := &Bucket{root: abs}
	if f := fsFlusher(abs); f != nil {
		b.group = newGroupSync(f)
	}
	return b, nil
}

// Root is the directory holding the objects.
func (b *Bucket) Root() string { return b.root }

func (b *Bucket) path(key string) (string, error) {
	if err := storage.CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// Get implements storage.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: get %q: %w", key, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("storage: get %q: %w", key, storage.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %q: %w", key, err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("storage: get %q: %w", key, storage.ErrNotFound)
	}
	return f, nil
}

// Put implements storage.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	o := storage.ApplyPutOptions(opts)
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: put %q: %w", key, err)
	}
	dir := filepath.Dir(p)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		// The key's folder is new (most artifact keys): make it, then try
		// again. Asking first would cost every Put a stat.
		if err = os.MkdirAll(dir, 0o755); err == nil {
			tmp, err = os.CreateTemp(dir, ".tmp-*")
		}
	}
	if err != nil {
		return fmt.Errorf("storage: put %q: %w", key, err)
	}
	named := false // the temporary file was renamed to the key
	defer func() {
		if !named {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, storage.ContextReader(ctx, r)); err != nil {
		tmp.Close()
		return fmt.Errorf("storage: put %q: %w", key, err)
	}
	if b.group == nil {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return fmt.Errorf("storage: put %q: %w", key, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("storage: put %q: %w", key, err)
	}
	if b.group != nil {
		// The content is durable before any name points at it.
		if err := b.group.wait(); err != nil {
			return fmt.Errorf("storage: put %q: %w", key, err)
		}
	}
	if o.IfAbsent {
		// link fails with EEXIST if the key is there: an atomic create.
		if err := os.Link(tmp.Name(), p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("storage: put %q: %w", key, storage.ErrExists)
			}
			return fmt.Errorf("storage: put %q: %w", key, err)
		}
	} else if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("storage: put %q: %w", key, err)
	} else {
		named = true
	}
	if b.group != nil {
		if err := b.group.wait(); err != nil {
			return fmt.Errorf("storage: put %q: %w", key, err)
		}
		return nil
	}
	// Without a group flush: the directory's fsync makes the new name
	// durable (a file system that cannot sync a directory is accepted).
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: put %q: %w", key, err)
	}
	return nil
}

// Exists implements storage.Bucket.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.Attributes(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Attributes implements storage.Bucket.
func (b *Bucket) Attributes(ctx context.Context, key string) (storage.Attributes, error) {
	p, err := b.path(key)
	if err != nil {
		return storage.Attributes{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.Attributes{}, fmt.Errorf("storage: attributes %q: %w", key, err)
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.IsDir()) {
		return storage.Attributes{}, fmt.Errorf("storage: attributes %q: %w", key, storage.ErrNotFound)
	}
	if err != nil {
		return storage.Attributes{}, fmt.Errorf("storage: attributes %q: %w", key, err)
	}
	return storage.Attributes{Size: st.Size(), LastModified: st.ModTime()}, nil
}

// Delete implements storage.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: delete %q: %w", key, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: delete %q: %w", key, err)
	}
	return nil
}

// List implements storage.Bucket. It walks only the directories that can hold keys
// with the prefix, in sorted order.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		// Start at the deepest directory fully named by the prefix.
		dirPart := ""
		if i := strings.LastIndex(prefix, "/"); i >= 0 {
			dirPart = prefix[:i]
		}
		start := filepath.Join(b.root, filepath.FromSlash(dirPart))
		if dirPart != "" && storage.CheckKey(dirPart) != nil {
			yield("", fmt.Errorf("storage: list %q: %w", prefix, storage.ErrInvalidKey))
			return
		}
		var walk func(dir, rel string) bool
		walk = func(dir, rel string) bool {
			if err := ctx.Err(); err != nil {
				return yield("", fmt.Errorf("storage: list %q: %w", prefix, err))
			}
			entries, err := os.ReadDir(dir)
			if errors.Is(err, fs.ErrNotExist) {
				return true
			}
			if err != nil {
				return yield("", fmt.Errorf("storage: list %q: %w", prefix, err))
			}
			// Sort so that "a/b" < "a-c" ordering matches the key order:
			// compare the key each entry would produce, directories with "/".
			names := make([]string, 0, len(entries))
			isDir := map[string]bool{}
			for _, e := range entries {
				n := e.Name()
				if strings.HasPrefix(n, ".tmp-") {
					continue
				}
				k := n
				if e.IsDir() {
					k = n + "/"
					isDir[k] = true
				}
				names = append(names, k)
			}
			sort.Strings(names)
			for _, n := range names {
				key := rel + n
				if isDir[n] {
					// Skip directories that cannot hold matching keys.
					if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key) {
						continue
					}
					if !walk(filepath.Join(dir, strings.TrimSuffix(n, "/")), key) {
						return false
					}
					continue
				}
				if strings.HasPrefix(key, prefix) {
					if !yield(key, nil) {
						return false
					}
				}
			}
			return true
		}
		rel := ""
		if dirPart != "" {
			rel = dirPart + "/"
		}
		walk(start, rel)
	}
}

// Close implements storage.Bucket.
func (b *Bucket) Close() error { return nil }

// As returns the file bucket behind b (through any Wrapper).
func As(b storage.Bucket) (*Bucket, bool) { return storage.As[*Bucket](b) }
