package spool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
)

// Dir is the spool's directory, absolute.
func (s *Spool) Dir() string { return s.dir }

// Entries counts the results waiting in the spool directory dir
// without opening the spool: nothing is locked, created or removed, so it
// may look at a spool another process uses. A dir that does not exist (or
// was never a spool) holds 0.
func Entries(dir string) (int, error) {
	des, err := os.ReadDir(filepath.Join(dir, spoolReady))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: spool %q: %w", dir, err)
	}
	n := 0
	for _, de := range des {
		if de.IsDir() && de.Name()[0] != '.' {
			n++
		}
	}
	return n, nil
}

// DrainReport says what Spool.Drain did.
type DrainReport struct {
	// Delivered counts entries whose result is now in the store (written,
	// or found there already).
	Delivered int
	// Failed counts entries that can never be delivered (corrupt,
	// invalid), moved to <dir>/failed.
	Failed int
	// Left counts entries still waiting (the store failed).
	Left int
}

// Drain uploads every entry of the spool once, in spool order, and says
// what became of them. Unlike Run it does not wait for a store that is
// down: it returns the first error that stopped it, with Left > 0.
func (s *Spool) Drain(ctx context.Context) (DrainReport, error) {
	failedBefore := countDirs(filepath.Join(s.dir, spoolFailed))
	before := s.Pending()
	err := s.Flush(ctx)
	rep := DrainReport{Left: s.Pending(), Failed: countDirs(filepath.Join(s.dir, spoolFailed)) - failedBefore}
	rep.Delivered = max(0, before-rep.Left-rep.Failed)
	return rep, err
}

func countDirs(dir string) int {
	des, _ := os.ReadDir(dir)
	n := 0
	for _, de := range des {
		if de.IsDir() {
			n++
		}
	}
	return n
}

// Ledger remembers, per worker id, the spool directory the worker used
// last, so that a worker restarted with another spool while the old one
// still holds results is refused (those results would be out of sight
// until a worker ran on the old folder again). It is a directory of small
// JSON files, <Dir>/worker-<id>.json, written atomically. The zero value
// (Dir "") remembers nothing.
type Ledger struct {
	// Dir is the directory of the records (created on Record).
	Dir string
}

// spoolRecordSchema is the schema of one ledger record.
const spoolRecordSchema = "benchfleet.spool-ledger/v1"

// spoolRecord is one worker's ledger record.
type spoolRecord struct {
	Schema  string    `json:"schema"`
	Worker  string    `json:"worker"`
	Spool   string    `json:"spool"` // absolute; "" = the worker ran without a spool
	Updated time.Time `json:"updated"`
}

// ErrMoved is matched (errors.Is) by the error of Ledger.Check
// when a worker's earlier spool still holds results.
var ErrMoved = errors.New("spool moved")

// MovedError names the worker, the spool that still holds results
// and how to get them to the store.
type MovedError struct {
	Worker  string
	Old     string // the earlier spool, which holds Entries results
	New     string // the spool asked for now ("" = none)
	Entries int
}

func (e *MovedError) Error() string {
	now := "no spool"
	if e.New != "" {
		now = "spool " + e.New
	}
	return fmt.Sprintf("worker %s: its earlier spool %s still holds %d result(s) that are not in the store, and it is starting with %s: "+
		"start it with --spool %s (it uploads them), or drain that folder first with: benchfleet spool drain %s",
		e.Worker, e.Old, e.Entries, now, e.Old, e.Old)
}

// Is makes the error match ErrMoved.
func (e *MovedError) Is(target error) bool { return target == ErrMoved }

func (l Ledger) path(worker string) string {
	return filepath.Join(l.Dir, "worker-"+url.PathEscape(worker)+".json")
}

// Check returns a *MovedError when worker is about to start with
// spool dir ("" = none) while a spool it used before, another folder,
// still holds results: the one in its ledger record, or any of also
// (spools it is known to have used, e.g. from its last heartbeat on this
// host). Without a record and with no also, it returns nil.
func (l Ledger) Check(worker, dir string, also ...string) error {
	var err error
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return fmt.Errorf("storage: spool %q: %w", dir, err)
		}
	}
	var olds []string
	if l.Dir != "" {
		data, err := os.ReadFile(l.path(worker))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Errorf("storage: spool ledger: %w", err)
		default:
			var rec spoolRecord
			if err := json.Unmarshal(data, &rec); err != nil || rec.Schema != spoolRecordSchema {
				return fmt.Errorf("storage: spool ledger %s: not a ledger record (schema %q, %v)", l.path(worker), rec.Schema, err)
			}
			olds = append(olds, rec.Spool)
		}
	}
	for _, old := range append(olds, also...) {
		if old == "" || filepath.Clean(old) == dir {
			continue
		}
		n, err := Entries(old)
		if err != nil {
			return err
		}
		if n > 0 {
			return &MovedError{Worker: worker, Old: filepath.Clean(old), New: dir, Entries: n}
		}
	}
	return nil
}

// Record notes that worker runs with spool dir ("" = none) from now on.
func (l Ledger) Record(worker, dir string) error {
	if l.Dir == "" {
		return nil
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("storage: spool %q: %w", dir, err)
		}
		dir = abs
	}
	data, err := json.MarshalIndent(spoolRecord{Schema: spoolRecordSchema, Worker: worker, Spool: dir, Updated: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("storage: spool ledger: %w", err)
	}
	f, err := os.CreateTemp(l.Dir, ".worker-*.tmp")
	if err != nil {
		return fmt.Errorf("storage: spool ledger: %w", err)
	}
	_, werr := f.Write(append(data, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("storage: spool ledger: %w", err)
	}
	if err := os.Rename(f.Name(), l.path(worker)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("storage: spool ledger: %w", err)
	}
	_ = atomicfile.SyncDir(l.Dir)
	return nil
}
