package build

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/redact"
)

// treeRel is the entry of repo's tree at commit.
func treeRel(repo, commit string) string {
	return dirTrees + "/" + shortHash(repo, 16) + "-" + commit
}

// mirrorName is the directory of repo's mirror: a readable part of its
// name and a hash of all of it. A 64-digit commit is of a SHA-256
// repository, whose mirror is one too.
func mirrorName(repo, commit string) string {
	var b strings.Builder
	for _, r := range repo {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := strings.TrimLeft(b.String(), ".-") + "-" + shortHash(repo, 12)
	if len(commit) == 64 {
		name += "-sha256"
	}
	return name + ".git"
}

func shortHash(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:n]
}

// makeTree extracts repo's tree at commit into tmp, fetching the commit
// into its mirror first when the mirror lacks it.
func (c *Cache) makeTree(ctx context.Context, repo, url, commit, tmp string, log io.Writer) error {
	mirror, err := c.fetch(ctx, repo, url, commit, log)
	if err != nil {
		return err
	}
	gitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	extracted := make(chan error, 1)
	go func() {
		err := extract(pr, tmp)
		if err != nil {
			cancel()
		}
		_, _ = io.Copy(io.Discard, pr) // git's trailing padding
		extracted <- err
	}()
	tail, err := c.git(gitCtx, log, false, pw, mirror, "archive", "--format=tar", commit)
	pw.CloseWithError(err) // extract, still reading, ends with git's failure
	exErr := <-extracted
	var unsafe *unsafeEntryError
	switch {
	case errors.As(exErr, &unsafe):
		return device.Invalid("the tree of %s at %s cannot be made safely: %v", repo, commit, unsafe)
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil && !ctxErr(err): // git failed, not cancelled for extract's failure
		if noSpace(err, tail) {
			return device.HostFault("the build cache %s is out of space: git archive %s: %s", c.dir, commit, gitLines(tail))
		}
		return device.HostFault("git archive of %s at %s in its mirror failed (%s): %s", repo, commit, exitText(err), gitLines(tail))
	case exErr != nil:
		return c.hostIO("extract the tree of "+repo+" at "+commit, exErr)
	}
	return nil
}

// fetch makes sure repo's mirror holds commit and returns the mirror's
// path. Fetches of one mirror take turns.
func (c *Cache) fetch(ctx context.Context, repo, url, commit string, log io.Writer) (string, error) {
	name := mirrorName(repo, commit)
	mirror := c.path(dirMirrors + "/" + name)
	unlock, err := c.lockMirror(ctx, name)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(mirror); errors.Is(err, os.ErrNotExist) {
		if err := c.initMirror(ctx, mirror, commit, log); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", c.hostIO("mirror of "+repo, err)
	}
	if ok, err := c.hasCommit(ctx, mirror, commit); err != nil || ok {
		return mirror, err
	}
	shown := redact.Userinfo(url)
	logf(log, "fetching commit %s of %s from %s", commit, repo, shown)
	glog, flush := redacting(log, url)
	defer flush()
	ref := "refs/benchfleet/" + commit
	// A server that lets clients ask for any commit (protocol v2, GitHub)
	// sends it alone, whether or not a branch holds it.
	_, err = c.gitRemote(ctx, glog, mirror, url, "fetch", "--no-tags", "--no-write-fetch-head", remote, "+"+commit+":"+ref)
	if ctxErr(err) {
		return "", err
	}
	if ok, herr := c.hasCommit(ctx, mirror, commit); herr != nil || ok {
		c.measureMirror(name)
		if herr != nil {
			return "", herr
		}
		return mirror, c.keep(ctx, mirror, repo, commit, log)
	}
	// It refused or has no such commit: is it there at all?
	if tail, err := c.gitRemote(ctx, io.Discard, mirror, url, "ls-remote", remote, "HEAD"); err != nil {
		if ctxErr(err) {
			return "", err
		}
		return "", device.HostFault("the mirror of %s cannot read %s (%s): %s", repo, shown, exitText(err), hide(gitLines(tail), url))
	}
	// It answers: take its branches and tags, then look again.
	tail, err := c.gitRemote(ctx, glog, mirror, url, "fetch", "--no-tags", "--no-write-fetch-head", remote,
		"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	c.measureMirror(name)
	if err != nil {
		if ctxErr(err) {
			return "", err
		}
		if noSpace(err, tail) {
			return "", device.HostFault("the build cache %s is out of space: fetching %s: %s", c.dir, repo, hide(gitLines(tail), url))
		}
		return "", device.HostFault("the mirror of %s cannot fetch from %s (%s): %s", repo, shown, exitText(err), hide(gitLines(tail), url))
	}
	ok, err := c.hasCommit(ctx, mirror, commit)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", device.Invalid("commit %s is not in %s: the mirror fetched %s (its branches, its tags and the commit by id) and has no such commit", commit, repo, shown)
	}
	return mirror, c.keep(ctx, mirror, repo, commit, log)
}

// keep makes the fetched commit a ref of the mirror's own
// (refs/benchfleet/<commit>), so no gc prunes it however the branches
// move.
func (c *Cache) keep(ctx context.Context, mirror, repo, commit string, log io.Writer) error {
	ref := "refs/benchfleet/" + commit
	tail, err := c.git(ctx, log, false, nil, mirror, "update-ref", ref, commit)
	switch {
	case err == nil:
		return nil
	case ctxErr(err):
		return err
	case noSpace(err, tail):
		return device.HostFault("the build cache %s is out of space: git update-ref %s: %s", c.dir, ref, gitLines(tail))
	}
	return device.HostFault("the mirror of %s: git update-ref %s (%s): %s", repo, ref, exitText(err), gitLines(tail))
}

// lockMirror takes the mirror's turn, waiting at most until ctx ends.
func (c *Cache) lockMirror(ctx context.Context, name string) (func(), error) {
	c.mu.Lock()
	ch := c.mirrorLocks[name]
	if ch == nil {
		ch = make(chan struct{}, 1)
		c.mirrorLocks[name] = ch
	}
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// initMirror makes an empty bare repository at mirror, in a temporary
// beside it renamed into place.
func (c *Cache) initMirror(ctx context.Context, mirror, commit string, log io.Writer) error {
	tmp, err := os.MkdirTemp(filepath.Dir(mirror), tmpPrefix+filepath.Base(mirror)+"-")
	if err != nil {
		return c.hostIO("make a mirror", err)
	}
	defer os.RemoveAll(tmp)
	args := []string{"init", "--bare", "--quiet"}
	if len(commit) == 64 {
		args = append(args, "--object-format=sha256")
	}
	tail, err := c.git(ctx, log, false, nil, "", append(args, tmp)...)
	if err != nil {
		if ctxErr(err) {
			return err
		}
		if missingProgram(err) {
			return device.HostFault("git (%s) is not installed: the host cannot make test trees", c.gitPath)
		}
		return device.HostFault("git init --bare %s failed (%s): %s", tmp, exitText(err), gitLines(tail))
	}
	if err := os.Rename(tmp, mirror); err != nil {
		return c.hostIO("rename a mirror into place", err)
	}
	return nil
}

// hasCommit reports whether the mirror holds commit as a commit. The
// error is for git that cannot run at all.
func (c *Cache) hasCommit(ctx context.Context, mirror, commit string) (bool, error) {
	_, err := c.git(ctx, io.Discard, false, nil, mirror, "cat-file", "-e", commit+"^{commit}")
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee):
		return false, nil
	case ctxErr(err):
		return false, err
	case missingProgram(err):
		return false, device.HostFault("git (%s) is not installed: the host cannot make test trees", c.gitPath)
	default:
		return false, device.HostFault("git (%s) cannot run: %v", c.gitPath, err)
	}
}

// measureMirror records the mirror's size after a fetch.
func (c *Cache) measureMirror(name string) {
	size := dirSize(c.path(dirMirrors + "/" + name))
	c.mu.Lock()
	c.mirrors[name] = size
	c.mu.Unlock()
}

// unsafeEntryError is an entry of a tree's archive that extract refuses.
type unsafeEntryError struct {
	Name, Why string
}

func (e *unsafeEntryError) Error() string { return fmt.Sprintf("entry %q: %s", e.Name, e.Why) }

// extract writes the tar stream r into dir (which exists and is empty):
// directories, regular files (mode 0644, or 0755 when executable) and
// symbolic links, as git archive writes them. It refuses (an
// *unsafeEntryError) any other kind of entry, a name that is absolute,
// not clean, climbs out with "..", or holds a ".git" element, and an
// entry whose parent is not a directory it made or that names a path
// twice; it never writes through a symbolic link. Symbolic links are kept
// as the commit has them, whatever they point at: they are followed only
// by the job, as the job's user.
func extract(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	made := map[string]byte{".": tar.TypeDir} // what extract made, by clean name
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeXGlobalHeader { // git archive's commit id
			continue
		}
		name := strings.TrimSuffix(h.Name, "/")
		if why := unsafeName(name); why != "" {
			return &unsafeEntryError{h.Name, why}
		}
		if _, dup := made[name]; dup {
			return &unsafeEntryError{h.Name, "names a path twice"}
		}
		if made[path.Dir(name)] != tar.TypeDir {
			if _, ok := made[path.Dir(name)]; ok {
				return &unsafeEntryError{h.Name, "its parent is not a directory"}
			}
			return &unsafeEntryError{h.Name, "comes before its parent directory"}
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			mode := os.FileMode(0o644)
			if h.Mode&0o100 != 0 {
				mode = 0o755
			}
			if err := writeEntry(target, tr, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if h.Linkname == "" {
				return &unsafeEntryError{h.Name, "is a symbolic link to nothing"}
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			return &unsafeEntryError{h.Name, fmt.Sprintf("is of tar type %q, not a directory, file or symbolic link", h.Typeflag)}
		}
		made[name] = h.Typeflag
	}
}

// unsafeName says why a tree may not hold name ("" when it may).
func unsafeName(name string) string {
	switch {
	case name == "" || name == ".":
		return "is empty"
	case strings.HasPrefix(name, "/"):
		return "is absolute"
	case strings.ContainsRune(name, 0):
		return "holds a NUL"
	case path.Clean(name) != name:
		return "is not a clean path"
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "climbs out of the tree"
		}
		if strings.EqualFold(el, ".git") {
			return "is inside a .git directory"
		}
	}
	return ""
}

// writeEntry creates the file path with r's content. O_EXCL never
// follows a symbolic link at path, and extract made every parent itself.
func writeEntry(path string, r io.Reader, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
