package box

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
)

// Conditions of a file ReadFile and CopyFile refuse; the error is a
// *FileError wrapping one of them.
var (
	// ErrNotRegular: the file is a symlink, fifo, socket, device or
	// directory. A symlink is never followed, a fifo never opened for
	// long enough to block.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the limit, or grew past it
	// while read.
	ErrTooLarge = errors.New("file over the size limit")
	// ErrLinked: the file has more than one hard link. A job could link a
	// file it cannot read (where fs.protected_hardlinks is off) and have
	// the worker read it.
	ErrLinked = errors.New("file with other hard links")
)

// FileError is a file ReadFile or CopyFile refused, and why.
type FileError struct {
	// Path is the file as given.
	Path string
	// Err is ErrNotRegular, ErrTooLarge or ErrLinked.
	Err error
	// Mode is the file's type (ErrNotRegular).
	Mode fs.FileMode
	// Size is the file's size in bytes as stat reported it, or (Grew) at
	// least how many bytes it had when read (ErrTooLarge).
	Size int64
	// Max is the limit in bytes (ErrTooLarge).
	Max int64
	// Grew is set when the file was within Max at stat and over it when
	// read (ErrTooLarge).
	Grew bool
	// Links is the file's hard link count (ErrLinked).
	Links uint64
}

func (e *FileError) Error() string {
	switch {
	case errors.Is(e.Err, ErrNotRegular):
		t := "a " + e.Mode.Type().String()
		switch {
		case e.Mode&fs.ModeSymlink != 0:
			t = "a symlink"
		case e.Mode&fs.ModeNamedPipe != 0:
			t = "a fifo"
		case e.Mode&fs.ModeSocket != 0:
			t = "a socket"
		case e.Mode.IsDir():
			t = "a directory"
		case e.Mode&fs.ModeDevice != 0:
			t = "a device"
		}
		return fmt.Sprintf("box: %s is not a regular file (%s)", e.Path, t)
	case errors.Is(e.Err, ErrTooLarge) && e.Grew:
		return fmt.Sprintf("box: %s grew over the %d byte limit while read", e.Path, e.Max)
	case errors.Is(e.Err, ErrTooLarge):
		return fmt.Sprintf("box: %s is %d bytes, over the %d byte limit", e.Path, e.Size, e.Max)
	case errors.Is(e.Err, ErrLinked):
		return fmt.Sprintf("box: %s has %d hard links (a link to a file the job could not read?)", e.Path, e.Links)
	}
	return fmt.Sprintf("box: %s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ReadFile reads a file a job wrote, of at most max bytes. It is never
// followed if it is a symlink (the last component of path; the directories
// above it must be ones the job cannot replace, such as Room.Out), never
// opened if it is not a regular file, never blocks on a fifo swapped in,
// and is refused by its size before a byte is read (a sparse file of any
// size costs a stat); at most max+1 bytes are read, in case it grows. A
// refused file is a *FileError (errors.Is ErrNotRegular, ErrTooLarge or
// ErrLinked).
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := openChecked(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := st.Size()
	if size == 0 {
		size = 512 // /proc and sysfs files report 0
	}
	buf := make([]byte, 0, min(size, max)+1)
	r := io.LimitReader(f, limit(max))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("box: read %s: %w", path, err)
		}
	}
	if int64(len(buf)) > max {
		return nil, &FileError{Path: path, Err: ErrTooLarge, Size: int64(len(buf)), Max: max, Grew: true}
	}
	return buf, nil
}

// CopyFile copies a file a job wrote (checked as ReadFile checks it) to
// dst, a new file of mode 0600 owned by the worker that replaces dst
// atomically. dst's directory must be the worker's, not the job's.
func CopyFile(src, dst string, max int64) (err error) {
	f, _, err := openChecked(src, max)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("box: copy %s: %w", src, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := io.Copy(tmp, io.LimitReader(f, limit(max)))
	if err != nil {
		return fmt.Errorf("box: copy %s to %s: %w", src, dst, err)
	}
	if n > max {
		return &FileError{Path: src, Err: ErrTooLarge, Size: n, Max: max, Grew: true}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("box: copy %s to %s: %w", src, dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("box: copy %s: %w", src, err)
	}
	return nil
}

// limit is how much to read of a file of at most max bytes: one more, to
// see it grew.
func limit(max int64) int64 {
	if max == math.MaxInt64 {
		return max
	}
	return max + 1
}

// openChecked opens path for reading if it is a regular file of one link
// and at most max bytes, without following a symlink or blocking.
func openChecked(path string, max int64) (*os.File, os.FileInfo, error) {
	if max < 0 {
		return nil, nil, fmt.Errorf("box: read %s: negative limit %d", path, max)
	}
	// Lstat first so a device or fifo is never opened at all; the open
	// below re-checks what it got, in case the file was swapped.
	lst, err := os.Lstat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("box: %w", err)
	}
	if err := check(path, lst, max); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, &FileError{Path: path, Err: ErrNotRegular, Mode: fs.ModeSymlink}
	case errors.Is(err, syscall.ENXIO):
		return nil, nil, &FileError{Path: path, Err: ErrNotRegular, Mode: fs.ModeSocket}
	case err != nil:
		return nil, nil, fmt.Errorf("box: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		err = check(path, st, max)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// check refuses st if it is not a regular file of one link and at most max
// bytes.
func check(path string, st os.FileInfo, max int64) error {
	if !st.Mode().IsRegular() {
		return &FileError{Path: path, Err: ErrNotRegular, Mode: st.Mode().Type()}
	}
	if n := links(st); n > 1 {
		return &FileError{Path: path, Err: ErrLinked, Links: n}
	}
	if st.Size() > max {
		return &FileError{Path: path, Err: ErrTooLarge, Size: st.Size(), Max: max}
	}
	return nil
}

// links is st's hard link count (1 when unknown).
func links(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// owner is st's uid and gid (-1 when unknown).
func owner(st os.FileInfo) (uid, gid int) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return -1, -1
}
