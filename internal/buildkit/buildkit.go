// Package buildkit makes the parts of a build a job names, for the build
// tests (device/build/buildtest wraps it) and `benchfleet bench builds`:
// pure-Python PEP 427 wheels written in Go, and bare git repositories made
// with real git. Nothing reaches a package index or the network.
package buildkit

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// FileTime is the time of every file in a wheel WriteWheel makes and of
// every commit MakeRepo makes, so the same files make the same bytes and
// the same commits.
var FileTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var nameRun = regexp.MustCompile(`[-_.]+`)

// DistInfo is the .dist-info directory of dist at version in a wheel.
func DistInfo(dist, version string) string {
	return nameRun.ReplaceAllString(dist, "_") + "-" + version + ".dist-info"
}

// WriteWheel writes a valid PEP 427 wheel of dist at version (pure Python,
// py3-none-any) into dir holding files (path in the wheel → content): the
// files, and DistInfo's METADATA, WHEEL and RECORD unless files holds one
// of them (a malformed WHEEL, say). A file whose content starts with "#!"
// is executable. It returns the wheel's path and its sha256.
func WriteWheel(dir, dist, version string, files map[string]string) (path, sha256Hex string, err error) {
	info := DistInfo(dist, version)
	all := map[string]string{
		info + "/METADATA": fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", dist, version),
		info + "/WHEEL":    "Wheel-Version: 1.0\nGenerator: benchfleet-buildkit\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for k, v := range files {
		all[k] = v
	}
	record := info + "/RECORD"
	delete(all, record)
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	slices.Sort(names)
	var rec strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name, content string) error {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: FileTime}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write([]byte(content))
		return err
	}
	for _, n := range names {
		sum := sha256.Sum256([]byte(all[n]))
		fmt.Fprintf(&rec, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[n]))
		if err := add(n, all[n]); err != nil {
			return "", "", fmt.Errorf("wheel %s: %w", dist, err)
		}
	}
	if custom, ok := files[record]; ok {
		err = add(record, custom)
	} else {
		fmt.Fprintf(&rec, "%s,,\n", record)
		err = add(record, rec.String())
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return "", "", fmt.Errorf("wheel %s: %w", dist, err)
	}
	path = filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", nameRun.ReplaceAllString(dist, "_"), version))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("wheel %s: %w", dist, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return path, hex.EncodeToString(sum[:]), nil
}

// MakeRepo makes a bare git repository under root (root/repo.git, with its
// work tree at root/work) with real git, holding one commit per map of
// files (path → content; each commit's files overlay the previous ones', a
// file whose content starts with "#!" is executable) on branch main, and
// returns its directory and the commits' full ids in order.
func MakeRepo(root string, commits ...map[string]string) (dir string, ids []string, err error) {
	work, dir := filepath.Join(root, "work"), filepath.Join(root, "repo.git")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=buildkit", "GIT_AUTHOR_EMAIL=buildkit@example.invalid",
		"GIT_COMMITTER_NAME=buildkit", "GIT_COMMITTER_EMAIL=buildkit@example.invalid")
	git := func(d string, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", d}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return strings.TrimSpace(string(out)), nil
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", nil, err
	}
	if _, err := git(work, "init", "--quiet", "--initial-branch=main"); err != nil {
		return "", nil, err
	}
	for i, files := range commits {
		for name, content := range files {
			p := filepath.Join(work, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", nil, err
			}
			mode := os.FileMode(0o644)
			if strings.HasPrefix(content, "#!") {
				mode = 0o755
			}
			_ = os.Remove(p)
			if err := os.WriteFile(p, []byte(content), mode); err != nil {
				return "", nil, err
			}
		}
		if _, err := git(work, "add", "--all"); err != nil {
			return "", nil, err
		}
		stamp := fmt.Sprintf("%d +0000", FileTime.Unix()+int64(i))
		env = append(env, "GIT_AUTHOR_DATE="+stamp, "GIT_COMMITTER_DATE="+stamp)
		if _, err := git(work, "commit", "--quiet", "--allow-empty", "-m", fmt.Sprintf("commit %d", i+1)); err != nil {
			return "", nil, err
		}
		id, err := git(work, "rev-parse", "HEAD")
		if err != nil {
			return "", nil, err
		}
		ids = append(ids, id)
	}
	if _, err := git(root, "clone", "--quiet", "--bare", work, dir); err != nil {
		return "", nil, err
	}
	return dir, ids, nil
}
