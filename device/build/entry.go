package build

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The cache's directories (relative to Config.Dir).
const (
	dirWheels  = "wheels"
	dirTrees   = "trees"
	dirEnvs    = "envs"
	dirMirrors = "mirrors"
	dirHome    = "home"
	dirTmp     = "tmp"
)

// entryKinds are the directories of evictable entries.
var entryKinds = []string{dirWheels, dirTrees, dirEnvs}

const (
	// tmpPrefix starts the name of every temporary beside an entry: what
	// is being made, or what is being removed. Nothing is used from one;
	// New removes them all.
	tmpPrefix = ".tmp-"
	// metaSuffix names an entry's record beside it: its size (the file's
	// content) and its last use (the file's mtime).
	metaSuffix = ".entry"
)

// entry is one evictable directory of the cache: a wheel, a tree or an
// environment, complete (renamed into place).
type entry struct {
	rel    string // kind/id
	size   int64
	used   time.Time
	leases int
}

// path is the absolute path of rel (slash-separated) in the cache.
func (c *Cache) path(rel string) string { return filepath.Join(c.dir, filepath.FromSlash(rel)) }

// acquire leases the entry at rel if it is complete, and marks it used.
func (c *Cache) acquire(rel string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[rel]
	if e != nil {
		c.lease(e)
	}
	return e
}

// acquireBoth leases both entries, or neither when one is missing.
func (c *Cache) acquireBoth(a, b string) (*entry, *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ea, eb := c.entries[a], c.entries[b]
	if ea == nil || eb == nil {
		return nil, nil
	}
	c.lease(ea)
	c.lease(eb)
	return ea, eb
}

// lease takes a lease on e and records its use (on disk too, so the
// order of last use survives a restart). c.mu is held.
func (c *Cache) lease(e *entry) {
	e.leases++
	e.used = time.Now()
	_ = os.Chtimes(c.path(e.rel)+metaSuffix, e.used, e.used)
}

// release gives back a lease on e, then evicts what the bound asks for.
func (c *Cache) release(e *entry) {
	c.mu.Lock()
	e.leases--
	c.mu.Unlock()
	c.evict()
}

// create runs fn to make the entry rel in a fresh temporary directory beside
// its place, then settles it (modes, size) and renames it into place. The
// new entry is returned leased. fn gets the temporary directory and the
// entry's final path.
func (c *Cache) create(rel string, fn func(tmp, final string) error) (*entry, error) {
	final := c.path(rel)
	tmp, err := os.MkdirTemp(filepath.Dir(final), tmpPrefix+filepath.Base(final)+"-")
	if err != nil {
		return nil, c.hostIO("make "+rel, err)
	}
	e, err := c.makeIn(rel, tmp, final, fn)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	c.log.Info().Str("entry", rel).Int64("bytes", e.size).Msg("build: made")
	c.evict()
	return e, nil
}

func (c *Cache) makeIn(rel, tmp, final string, fn func(tmp, final string) error) (*entry, error) {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, c.hostIO("make "+rel, err)
	}
	if err := fn(tmp, final); err != nil {
		return nil, err
	}
	size, err := settle(tmp)
	if err != nil {
		return nil, c.hostIO("settle "+rel, err)
	}
	if err := syncFS(tmp); err != nil {
		return nil, c.hostIO("sync "+rel, err)
	}
	// The record first, then the entry: a crash between the two leaves a
	// record without an entry, which New removes.
	if err := writeFileAtomic(final+metaSuffix, []byte(strconv.FormatInt(size, 10)+"\n")); err != nil {
		return nil, c.hostIO("record "+rel, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(final + metaSuffix)
		return nil, c.hostIO("rename "+rel+" into place", err)
	}
	e := &entry{rel: rel, size: size, used: time.Now(), leases: 1}
	c.mu.Lock()
	c.entries[rel] = e
	c.mu.Unlock()
	return e, nil
}

// settle makes everything under dir readable and nothing writable by
// other users (directories 0755; files 0644, or 0755 when their owner may
// execute them) and returns its size in bytes. Symbolic links are left
// as they are; any other kind of file is an error.
func settle(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return nil
		case d.IsDir():
			return os.Chmod(p, 0o755)
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
			mode := fs.FileMode(0o644)
			if info.Mode()&0o100 != 0 {
				mode = 0o755
			}
			if info.Mode().Perm() != mode {
				return os.Chmod(p, mode)
			}
			return nil
		default:
			return fmt.Errorf("%s: unexpected %v", p, t)
		}
	})
	return size, err
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) int64 {
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return size
}

// writeFileAtomic writes data to path through a temporary beside it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// evict removes entries nobody leases, least recently used first, until
// the entries total at most MaxBytes. An entry is taken out of the index
// and renamed aside (no longer in place) under c.mu, then deleted.
func (c *Cache) evict() {
	c.mu.Lock()
	if c.maxBytes <= 0 {
		c.mu.Unlock()
		return
	}
	var total int64
	var idle []*entry
	for _, e := range c.entries {
		total += e.size
		if e.leases == 0 {
			idle = append(idle, e)
		}
	}
	if total <= c.maxBytes {
		c.mu.Unlock()
		return
	}
	slices.SortFunc(idle, func(a, b *entry) int { return cmp.Or(a.used.Compare(b.used), strings.Compare(a.rel, b.rel)) })
	var gone []string
	for _, e := range idle {
		if total <= c.maxBytes {
			break
		}
		final := c.path(e.rel)
		aside := filepath.Join(filepath.Dir(final), fmt.Sprintf("%s%s-evicted-%d", tmpPrefix, filepath.Base(final), time.Now().UnixNano()))
		if err := os.Rename(final, aside); err != nil {
			c.log.Warn().Err(err).Str("entry", e.rel).Msg("build: cannot evict")
			continue
		}
		_ = os.Remove(final + metaSuffix)
		delete(c.entries, e.rel)
		total -= e.size
		gone = append(gone, aside)
		c.log.Info().Str("entry", e.rel).Int64("bytes", e.size).Time("last_used", e.used).Msg("build: evicted")
	}
	c.mu.Unlock()
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			c.log.Warn().Err(err).Str("path", p).Msg("build: cannot remove an evicted entry")
		}
	}
}

// recover reads the entries a previous process left and removes what it
// left unfinished: temporaries, records without an entry and entries
// without a record. It returns how many it removed.
func (c *Cache) recover() (removed int, err error) {
	for _, kind := range entryKinds {
		dir := c.path(kind)
		names, err := readDirNames(dir)
		if err != nil {
			return removed, err
		}
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			switch id, isMeta := strings.CutSuffix(n, metaSuffix); {
			case strings.HasPrefix(n, tmpPrefix):
				err = os.RemoveAll(p)
			case isMeta && !have[id]:
				err = os.Remove(p)
			case isMeta:
				c.index(kind+"/"+id, p)
				continue
			case !have[n+metaSuffix]:
				err = os.RemoveAll(p)
			default:
				continue
			}
			if err != nil {
				return removed, err
			}
			removed++
		}
	}
	names, err := readDirNames(c.path(dirMirrors))
	if err != nil {
		return removed, err
	}
	for _, n := range names {
		p := c.path(dirMirrors + "/" + n)
		if strings.HasPrefix(n, tmpPrefix) {
			if err := os.RemoveAll(p); err != nil {
				return removed, err
			}
			removed++
			continue
		}
		locks, err := removeGitLocks(p)
		if err != nil {
			return removed, err
		}
		removed += locks
		c.mirrors[n] = dirSize(p)
	}
	// What tools left in the cache's TMPDIR.
	names, err = readDirNames(c.path(dirTmp))
	if err != nil {
		return removed, err
	}
	for _, n := range names {
		if err := os.RemoveAll(c.path(dirTmp + "/" + n)); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

// index adds the complete entry rel, whose record is at meta.
func (c *Cache) index(rel, meta string) {
	e := &entry{rel: rel}
	if info, err := os.Stat(meta); err == nil {
		e.used = info.ModTime()
	}
	data, err := os.ReadFile(meta)
	size, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || perr != nil || size < 0 {
		size = dirSize(c.path(rel))
	}
	e.size = size
	c.entries[rel] = e
}

// removeGitLocks removes the lock files a git command killed in the
// mirror at dir left (a stale refs/...lock fails every later fetch). The
// cache's directory lock makes this process the mirror's only user.
func removeGitLocks(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			if err := os.Remove(p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func readDirNames(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(des))
	for i, d := range des {
		names[i] = d.Name()
	}
	return names, nil
}

// flight is one making in progress: callers for the same key wait for it.
type flight struct {
	done chan struct{}
	err  error
}

// once runs fn unless a call with the same key is running; then it calls
// waiting (if not nil), waits for that call and returns ran=false with its
// error, or with nil when its ctx ended it (the caller then looks again
// and may run fn itself).
func (c *Cache) once(ctx context.Context, key string, waiting func(), fn func() error) (ran bool, err error) {
	c.mu.Lock()
	if f := c.flights[key]; f != nil {
		c.mu.Unlock()
		if waiting != nil {
			waiting()
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
		if ctxErr(f.err) {
			return false, nil
		}
		return false, f.err
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.flights, key)
		c.mu.Unlock()
		f.err = err
		close(f.done)
	}()
	return true, fn()
}

// ensure returns the entry rel leased, making it with fn when it is
// missing (made reports that this call made it). Concurrent calls for one
// rel make it once.
func (c *Cache) ensure(ctx context.Context, rel string, fn func(tmp, final string) error) (e *entry, made bool, err error) {
	for {
		if e := c.acquire(rel); e != nil {
			return e, false, nil
		}
		ran, err := c.once(ctx, rel, nil, func() error {
			if e = c.acquire(rel); e != nil {
				return nil
			}
			if e, err = c.create(rel, fn); err != nil {
				return err
			}
			made = true
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if ran {
			return e, made, nil
		}
		if err := context.Cause(ctx); err != nil {
			return nil, false, err
		}
	}
}
