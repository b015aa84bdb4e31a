// Package dirlock keeps two processes from using one directory at once (two
// `benchfleet dev` on one data directory, two workers on one spool): an
// advisory lock on DIR/.lock that records who holds it.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrHeld is matched (errors.Is) by the error of Lock when another process
// holds the directory.
var ErrHeld = errors.New("directory in use")

// HeldError names the directory and, as far as the lock file says, who
// holds it.
type HeldError struct {
	Dir    string
	Holder string // "pid 1234 (benchfleet dev) since 2026-12-01T08:00:00Z", or "" when unknown
}

func (e *HeldError) Error() string {
	who := e.Holder
	if who == "" {
		who = "another process"
	}
	return fmt.Sprintf("%s is in use by %s; stop it or give another directory", e.Dir, who)
}

// Is makes the error match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held directory lock; Unlock releases it. The operating system
// also releases it when the process dies, so a crash leaves no stale lock.
type Lock struct {
	f *os.File
}

// Acquire locks dir (creating it) for what (e.g. "benchfleet dev") without
// waiting: when another process holds it, the error is a *HeldError.
func Acquire(dir, what string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := tryLock(f); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &HeldError{Dir: dir, Holder: strings.TrimSpace(string(data))}
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d on %s (%s) since %s\n", os.Getpid(), host, what, time.Now().UTC().Format(time.RFC3339))), 0)
	return &Lock{f: f}, nil
}

// Unlock releases the lock. It is safe to call on a nil Lock and twice.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlock(l.f)
	l.f.Close()
	l.f = nil
}
