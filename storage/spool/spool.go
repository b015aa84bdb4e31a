// Package spool is the worker's outage spool: results (with their
// artifacts) kept durable on local disk while the store is down and
// delivered to it (storage.Deliver) when it is back, never lost and never
// written twice; and the ledger that keeps a worker from leaving a spool
// that still holds results behind.
package spool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/rs/zerolog"
)

// Spool defaults; Config documents each.
const (
	DefaultRetryMin = time.Second
	DefaultRetryMax = time.Minute
	// DefaultCallTimeout bounds each store call of Spool.Deliver
	// (see Config.CallTimeout).
	DefaultCallTimeout = 5 * time.Second
)

// MinFree is the room Spool.Check wants on the spool's file system
// (1 MiB): less, and the spool reports that it cannot take a result.
const MinFree = 1 << 20

// ErrRefused: the store did not take a result and the spool could not
// write it either (its disk is full, read-only or failing). The result is
// neither in the store nor on local disk; the job is not the cause.
var ErrRefused = errors.New("storage: the spool cannot take the result")

// Spool directory layout:
//
//	<dir>/tmp/<entry>/     an entry being written (removed at start: never whole)
//	<dir>/ready/<entry>/   committed entries, waiting for upload
//	<dir>/trash/<entry>/   delivered entries being removed
//	<dir>/failed/<entry>/  entries that can never be delivered (kept for people)
//
// An entry holds entry.json (the manifest), result.json (the result as it
// was before the failed delivery) and files/<name> (copies of the
// artifacts). It is written in tmp/, every file and directory fsynced, then
// renamed into ready/ in one step, so a crash leaves either a whole entry or
// a tmp/ leftover that the next start removes.
const (
	spoolTmp      = "tmp"
	spoolReady    = "ready"
	spoolTrash    = "trash"
	spoolFailed   = "failed"
	spoolManifest = "entry.json"
	spoolResult   = "result.json"
	spoolFiles    = "files"
	spoolSchema   = "benchfleet.spool/v1"
)

// errEntryCorrupt marks a spool entry that cannot be read back.
var errEntryCorrupt = errors.New("corrupt spool entry")

// Config configures a Spool.
type Config struct {
	// Dir is the spool directory; it is created if missing. Required. One
	// process uses a spool directory at a time.
	Dir string
	// Bucket is the store results are delivered to. Required.
	Bucket storage.Bucket
	// Log receives the spool's logs (component=spool). Default: none.
	Log zerolog.Logger
	// RetryMin and RetryMax bound the exponential backoff of Run while the
	// store is down. Defaults DefaultRetryMin (1s) and
	// DefaultRetryMax (1m).
	RetryMin time.Duration
	RetryMax time.Duration
	// CallTimeout bounds each store call Deliver makes
	// (storage.WithCallTimeout: a Put of n bytes also gets n at
	// storage.CallTimeoutMinRate): a store that does
	// not answer within it is treated as down and the result is spooled.
	// Run's uploads are not bounded by it. Default DefaultCallTimeout
	// (5s).
	CallTimeout time.Duration
}

// Spool keeps results durable on local disk while the store is down and
// uploads them when it is back. Together with write-once results it never
// loses a result and never writes one twice:
//
//   - Deliver returns only after the result is in the store or fsynced in
//     the spool; either way the caller may ack the job.
//   - Run deletes an entry only after its result is durable in the store
//     (or was already there: ErrExists), so a crash at any point either
//     leaves the entry (uploaded again, finding ErrExists) or nothing.
//
// A Spool is safe for concurrent use.
type Spool struct {
	cfg     Config
	dir     string
	bucket  storage.Bucket
	log     zerolog.Logger
	pending atomic.Int64
	wake    chan struct{}
	drainMu sync.Mutex // one drain pass at a time
}

// spoolManifestDoc is entry.json.
type spoolManifestDoc struct {
	Schema    string    `json:"schema"`
	Key       string    `json:"key"`
	Run       string    `json:"run"`
	Job       string    `json:"job"`
	Attempt   int       `json:"attempt"`
	Files     []string  `json:"files"`
	SpooledAt time.Time `json:"spooled_at"`
	Reason    string    `json:"reason"`
}

// New opens (creating) the spool in dir for bucket b. It removes
// half-written entries a crashed process left behind and counts the
// committed ones, which Run then uploads.
func New(dir string, b storage.Bucket, log zerolog.Logger) (*Spool, error) {
	return NewWithConfig(Config{Dir: dir, Bucket: b, Log: log})
}

// NewWithConfig is New with every setting.
func NewWithConfig(cfg Config) (*Spool, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("storage: spool: Dir is required")
	}
	if cfg.Bucket == nil {
		return nil, fmt.Errorf("storage: spool: Bucket is required")
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.RetryMax < cfg.RetryMin {
		return nil, fmt.Errorf("storage: spool: RetryMax (%s) is below RetryMin (%s)", cfg.RetryMax, cfg.RetryMin)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("storage: spool %q: %w", cfg.Dir, err)
	}
	s := &Spool{
		cfg:    cfg,
		dir:    dir,
		bucket: cfg.Bucket,
		log:    cfg.Log.With().Str("component", "spool").Str("spool", dir).Logger(),
		wake:   make(chan struct{}, 1),
	}
	// Only the worker may read or write the spool: an entry dropped into
	// ready/ is uploaded with the worker's credentials. Folders made
	// earlier with a wider mode are narrowed.
	for _, d := range []string{"", spoolTmp, spoolReady, spoolTrash, spoolFailed} {
		p := filepath.Join(dir, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("storage: spool %q: %w", dir, err)
		}
		if err := os.Chmod(p, 0o700); err != nil {
			return nil, fmt.Errorf("storage: spool %q: make %s private to the worker: %w", dir, p, err)
		}
	}
	// Leftovers of a crash: half-written entries and half-removed ones.
	for _, d := range []string{spoolTmp, spoolTrash} {
		if err := clearDir(filepath.Join(dir, d)); err != nil {
			return nil, fmt.Errorf("storage: spool %q: clear %s: %w", dir, d, err)
		}
	}
	names, err := s.entries()
	if err != nil {
		return nil, err
	}
	s.pending.Store(int64(len(names)))
	if len(names) > 0 {
		s.log.Info().Int("pending", len(names)).Msg("spool has results from an earlier run to upload")
	}
	return s, nil
}

// Pending is the number of spooled results not yet in the store.
func (s *Spool) Pending() int { return int(s.pending.Load()) }

// Check reports whether the spool can take a result now: its file system
// has MinFree left and a file can be created, written and removed in
// its directory. (Whether the store is up does not matter: that is what the
// spool is for.) An error matches ErrRefused.
func (s *Spool) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if free, ok := freeBytes(s.dir); ok && free < MinFree {
		return fmt.Errorf("storage: spool %q: %w: no space left on device (%d KiB free, %d KiB wanted)",
			s.dir, ErrRefused, free>>10, MinFree>>10)
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, spoolTmp), "check-*")
	if err != nil {
		return fmt.Errorf("storage: spool %q: %w: %w", s.dir, ErrRefused, err)
	}
	_, werr := f.Write([]byte("ok"))
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return fmt.Errorf("storage: spool %q: %w: %w", s.dir, ErrRefused, err)
	}
	return nil
}

// Deliver delivers r and its artifact files to the store (see the package
// function Deliver), each store call bounded by CallTimeout. If that fails
// for any reason other than ErrExists or an undeliverable result
// (ErrInvalidKey), a store that does not answer in time included, it
// copies the result and the files into a spool entry, fsynced and
// committed atomically, and returns spooled=true with a nil error: the
// result is durable and the caller may ack the job; Run uploads it later.
// key is the result's key in the store.
//
// ErrExists is returned as is (the result was already there; record
// nothing new). An error with spooled=false means the result is neither in
// the store nor in the spool: the caller must not ack. When the spool could
// not write the entry it matches ErrRefused and the store's error.
func (s *Spool) Deliver(ctx context.Context, r *protocol.Result, files []storage.ArtifactFile) (key string, spooled bool, err error) {
	if err := storage.CheckDeliverable(r, files); err != nil {
		return "", false, err
	}
	// Deliver leaves r unchanged when it fails; spool what the caller gave.
	orig := *r
	orig.Artifacts = slices.Clone(r.Artifacts)
	key, err = storage.Deliver(ctx, storage.WithCallTimeout(s.bucket, s.cfg.CallTimeout), r, files)
	if err == nil || errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrInvalidKey) || errors.Is(err, storage.ErrArtifactConflict) {
		return key, false, err
	}
	name, serr := s.write(&orig, key, files, err)
	if serr != nil {
		return key, false, fmt.Errorf("storage: spool %s: delivery failed (%w); %w: %w", r.Job, err, ErrRefused, serr)
	}
	s.log.Warn().Err(err).Str("run", r.Run).Str("job", r.Job).Int("attempt", r.Attempt).Str("entry", name).
		Int("pending", s.Pending()).Msg("store unavailable; result spooled")
	return key, true, nil
}

// write commits one entry and returns its name.
func (s *Spool) write(r *protocol.Result, key string, files []storage.ArtifactFile, cause error) (name string, err error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	// Time first, so entries upload in the order they were spooled; ids
	// contain no dots, so the name is unambiguous.
	name = fmt.Sprintf("%019d.%s.%s.a%d.%s", time.Now().UnixNano(), r.Run, r.Job, r.Attempt, hex.EncodeToString(rnd[:]))
	tmp := filepath.Join(s.dir, spoolTmp, name)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	fdir := filepath.Join(tmp, spoolFiles)
	if err := os.Mkdir(fdir, 0o700); err != nil {
		return "", err
	}
	m := spoolManifestDoc{
		Schema: spoolSchema, Key: key, Run: r.Run, Job: r.Job, Attempt: r.Attempt,
		Files: make([]string, 0, len(files)), SpooledAt: time.Now().UTC(), Reason: cause.Error(),
	}
	for _, f := range files {
		copyErr := error(nil)
		if f.Data != nil {
			copyErr = writeFileSync(filepath.Join(fdir, f.Name), f.Data)
		} else {
			copyErr = copyFileSync(f.Path, filepath.Join(fdir, f.Name))
		}
		if err := copyErr; err != nil {
			return "", fmt.Errorf("artifact %s: %w", f.Name, err)
		}
		m.Files = append(m.Files, f.Name)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	if err := writeFileSync(filepath.Join(tmp, spoolResult), data); err != nil {
		return "", err
	}
	mdata, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode manifest: %w", err)
	}
	if err := writeFileSync(filepath.Join(tmp, spoolManifest), mdata); err != nil {
		return "", err
	}
	for _, d := range []string{fdir, tmp} {
		if err := atomicfile.SyncDir(d); err != nil {
			return "", err
		}
	}
	ready := filepath.Join(s.dir, spoolReady)
	if err := os.Rename(tmp, filepath.Join(ready, name)); err != nil {
		return "", err
	}
	// The rename is the commit; make it durable before the caller acks.
	if err := atomicfile.SyncDir(ready); err != nil {
		return "", err
	}
	_ = atomicfile.SyncDir(filepath.Join(s.dir, spoolTmp))
	s.pending.Add(1)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return name, nil
}

// Run uploads spooled results until ctx is done: at once, whenever Deliver
// spools a new one, and with capped exponential backoff (RetryMin doubling
// to RetryMax) while the store is down. It returns nil when ctx is done;
// shutting down is not an error. Entries that can never be delivered
// (corrupt, invalid) are moved to <dir>/failed and logged, never deleted.
func (s *Spool) Run(ctx context.Context) error {
	backoff := s.cfg.RetryMin
	for {
		err := s.Flush(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var wait time.Duration
		if err != nil {
			wait = backoff
			s.log.Warn().Err(err).Int("pending", s.Pending()).Dur("retry_in", wait).Msg("spool upload failed; will retry")
			backoff = min(backoff*2, s.cfg.RetryMax)
		} else {
			backoff = s.cfg.RetryMin
			if s.Pending() > 0 {
				continue // spooled during the pass
			}
			wait = s.cfg.RetryMax // a safety net; Deliver wakes us
		}
		timer := time.NewTimer(wait)
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-s.wake:
				// Idle: upload the new entry now. Backing off: the store
				// was down a moment ago and Deliver has just found it down
				// again, so keep waiting.
				waiting = err != nil
			case <-timer.C:
				waiting = false
			}
		}
		timer.Stop()
	}
}

// Flush makes one pass over the spool, uploading every entry in the order
// it was spooled. It stops at the first entry that fails for a reason that
// may pass (the store is down) and returns that error; nil means the spool
// was empty when the pass ended (new entries may have arrived since).
func (s *Spool) Flush(ctx context.Context) error {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	names, err := s.entries()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := s.upload(ctx, name)
		switch {
		case err == nil || errors.Is(err, storage.ErrExists):
			if rerr := s.remove(name); rerr != nil {
				return rerr
			}
			ev := s.log.Info()
			msg := "spooled result delivered"
			if err != nil {
				msg = "spooled result was already in the store; dropped"
			}
			ev.Str("run", m.Run).Str("job", m.Job).Int("attempt", m.Attempt).Str("key", m.Key).
				Int("pending", s.Pending()).Msg(msg)
		case errors.Is(err, errEntryCorrupt) || errors.Is(err, storage.ErrInvalidKey) || errors.Is(err, storage.ErrArtifactConflict):
			if qerr := s.quarantine(name); qerr != nil {
				return qerr
			}
			s.log.Error().Err(err).Str("entry", name).Str("moved_to", filepath.Join(s.dir, spoolFailed, name)).
				Msg("spooled result can never be delivered; kept for inspection")
		default:
			return fmt.Errorf("storage: spool entry %s: %w", name, err)
		}
	}
	return nil
}

// upload delivers one entry.
func (s *Spool) upload(ctx context.Context, name string) (spoolManifestDoc, error) {
	dir := filepath.Join(s.dir, spoolReady, name)
	var m spoolManifestDoc
	mdata, err := os.ReadFile(filepath.Join(dir, spoolManifest))
	if err != nil {
		return m, fmt.Errorf("%w: %w", errEntryCorrupt, err)
	}
	if err := json.Unmarshal(mdata, &m); err != nil || m.Schema != spoolSchema {
		return m, fmt.Errorf("%w: manifest: schema %q, %v", errEntryCorrupt, m.Schema, err)
	}
	rdata, err := os.ReadFile(filepath.Join(dir, spoolResult))
	if err != nil {
		return m, fmt.Errorf("%w: %w", errEntryCorrupt, err)
	}
	var r protocol.Result
	if err := json.Unmarshal(rdata, &r); err != nil {
		return m, fmt.Errorf("%w: result: %w", errEntryCorrupt, err)
	}
	files := make([]storage.ArtifactFile, 0, len(m.Files))
	for _, f := range m.Files {
		if storage.CheckArtifactName(f) != nil {
			return m, fmt.Errorf("%w: artifact name %q", errEntryCorrupt, f)
		}
		p := filepath.Join(dir, spoolFiles, f)
		if _, err := os.Stat(p); err != nil {
			return m, fmt.Errorf("%w: artifact %s: %w", errEntryCorrupt, f, err)
		}
		files = append(files, storage.ArtifactFile{Name: f, Path: p})
	}
	_, err = storage.Deliver(ctx, s.bucket, &r, files)
	return m, err
}

// remove deletes a delivered entry: first out of ready/ in one rename, so a
// crash can never leave a partial entry there, then from the disk.
func (s *Spool) remove(name string) error {
	trash := filepath.Join(s.dir, spoolTrash, name)
	if err := os.Rename(filepath.Join(s.dir, spoolReady, name), trash); err != nil {
		return fmt.Errorf("storage: spool: remove delivered entry %s: %w", name, err)
	}
	_ = atomicfile.SyncDir(filepath.Join(s.dir, spoolReady))
	s.pending.Add(-1)
	if err := os.RemoveAll(trash); err != nil {
		s.log.Warn().Err(err).Str("entry", name).Msg("could not remove a delivered spool entry; it is removed at the next start")
	}
	return nil
}

// quarantine moves an undeliverable entry to failed/.
func (s *Spool) quarantine(name string) error {
	if err := os.Rename(filepath.Join(s.dir, spoolReady, name), filepath.Join(s.dir, spoolFailed, name)); err != nil {
		return fmt.Errorf("storage: spool: quarantine entry %s: %w", name, err)
	}
	_ = atomicfile.SyncDir(filepath.Join(s.dir, spoolReady))
	s.pending.Add(-1)
	return nil
}

// entries lists the committed entries in spool order.
func (s *Spool) entries() ([]string, error) {
	des, err := os.ReadDir(filepath.Join(s.dir, spoolReady))
	if err != nil {
		return nil, fmt.Errorf("storage: spool %q: %w", s.dir, err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func clearDir(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFileSync copies src to a new file dst and fsyncs it.
func copyFileSync(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeFileSync writes data to a new file and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
