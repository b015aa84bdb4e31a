//go:build linux

package box

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ReadFile refuses what is not a regular file of one link within the
// limit, at once: a 200 GB sparse file costs a stat, a fifo never blocks.
func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, data string) {
		if err := os.WriteFile(at(name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("report.json", `{"ok":true}`)
	write("empty", "")
	if err := os.Symlink(at("report.json"), at("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", at("shadow")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(at("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("sparse", "")
	if err := os.Truncate(at("sparse"), 200<<30); err != nil {
		t.Fatal(err)
	}
	write("linked", "secret")
	if err := os.Link(at("linked"), at("hardlink")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", at("sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, tc := range []struct {
		name, path string
		max        int64
		want       string
		err        error
		msg        string
	}{
		{name: "regular", path: at("report.json"), max: 1 << 20, want: `{"ok":true}`},
		{name: "exactly max", path: at("report.json"), max: 11, want: `{"ok":true}`},
		{name: "empty", path: at("empty"), max: 0, want: ""},
		{name: "over max", path: at("report.json"), max: 10, err: ErrTooLarge, msg: "is 11 bytes, over the 10 byte limit"},
		{name: "symlink", path: at("link"), max: 1 << 20, err: ErrNotRegular, msg: "(a symlink)"},
		{name: "symlink out", path: at("shadow"), max: 1 << 20, err: ErrNotRegular, msg: "(a symlink)"},
		{name: "fifo", path: at("fifo"), max: 1 << 20, err: ErrNotRegular, msg: "(a fifo)"},
		{name: "directory", path: at("dir"), max: 1 << 20, err: ErrNotRegular, msg: "(a directory)"},
		{name: "socket", path: at("sock"), max: 1 << 20, err: ErrNotRegular, msg: "(a socket)"},
		{name: "device", path: "/dev/null", max: 1 << 20, err: ErrNotRegular, msg: "(a device)"},
		{name: "200 GB sparse", path: at("sparse"), max: 1 << 20, err: ErrTooLarge, msg: "is 214748364800 bytes"},
		{name: "hard link", path: at("hardlink"), max: 1 << 20, err: ErrLinked, msg: "2 hard links"},
		// /proc files report size 0 and have more: like a file that grew.
		{name: "grew", path: "/proc/self/status", max: 10, err: ErrTooLarge, msg: "grew over the 10 byte limit"},
		{name: "missing", path: at("missing"), max: 1, err: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			data, err := ReadFile(tc.path, tc.max)
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %s", took)
			}
			if tc.err == nil {
				if err != nil || string(data) != tc.want {
					t.Fatalf("got %q, %v; want %q", data, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v with %q", err, tc.err, tc.msg)
			}
			var fe *FileError
			if tc.err != fs.ErrNotExist && (!errors.As(err, &fe) || fe.Path != tc.path) {
				t.Fatalf("err = %#v, want a *FileError for %s", err, tc.path)
			}
		})
	}
	if _, err := ReadFile(at("report.json"), -1); err == nil {
		t.Fatal("a negative limit was accepted")
	}
}

func TestCopyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "report.json"), filepath.Join(dir, "copy", "report.json")
	if err := os.WriteFile(src, []byte("report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte("an older, longer copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(src, dst, 6); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if uid, _ := owner(st); st.Mode().Perm() != 0o600 || uid != os.Geteuid() {
		t.Fatalf("copy: mode %v, uid %d", st.Mode().Perm(), uid)
	}
	if data, _ := os.ReadFile(dst); string(data) != "report" {
		t.Fatalf("copy holds %q", data)
	}

	if err := os.Symlink(src, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(filepath.Join(dir, "link"), dst, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("copy of a symlink: %v", err)
	}
	if err := CopyFile(src, dst, 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("copy over the limit: %v", err)
	}
	if err := CopyFile("/proc/self/status", dst, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("copy of a file that grows: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Fatalf("copies left %d files", len(entries))
	}
	if data, _ := os.ReadFile(dst); string(data) != "report" {
		t.Fatalf("a refused copy changed dst: %q", data)
	}
}
