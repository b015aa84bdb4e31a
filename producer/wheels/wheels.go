package wheels

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// A run's build: the wheels its jobs install (protocol.Source.Wheels). They
// live in the store under their content (protocol.BuildKey), written once:
// the key names the bytes, so two submits of the same file share one object
// and a key never changes what it holds.

// ErrBadWheel is matched (errors.Is) by the errors of ReadWheelFile and
// ParseWheelKey about their input: a missing file, a name that is not a
// wheel's, a malformed key. They are the submitter's to fix.
var ErrBadWheel = errors.New("bad wheel")

// ErrWheelMissing is matched by StageWheels's error for a wheel a job names
// by key that the store does not hold.
var ErrWheelMissing = errors.New("wheel not in the store")

// WheelFile is a wheel on the submitter's disk, hashed, to be stored at
// its content key.
type WheelFile struct {
	// Path is where the file is read from.
	Path string
	// Name is its file name, the key's last element.
	Name string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the digest of its bytes, lowercase hex.
	SHA256 string
}

// Key is the store key the file is stored at.
func (f WheelFile) Key() string { return protocol.BuildKey(f.SHA256, f.Name) }

// Wheel is the file as a job names it.
func (f WheelFile) Wheel() protocol.Wheel { return protocol.Wheel{URL: f.Key(), SHA256: f.SHA256} }

// zipMagic starts every zip archive with a local file header, and a wheel
// is a zip archive.
var zipMagic = []byte("PK\x03\x04")

// ReadWheelFile checks that path is a wheel — a regular file with a PEP 427
// wheel name that is a zip archive — and hashes it. Its errors match
// ErrBadWheel and name the path.
func ReadWheelFile(path string) (WheelFile, error) {
	name := filepath.Base(path)
	if !protocol.ValidWheelName(name) {
		return WheelFile{}, fmt.Errorf("%w: %s: not a wheel file name: a wheel is name-version(-build)?-python-abi-platform.whl (PEP 427) of letters, digits and . _ - +, at most %d bytes",
			ErrBadWheel, path, protocol.MaxWheelName)
	}
	f, err := os.Open(path)
	if err != nil {
		return WheelFile{}, fmt.Errorf("%w: %w", ErrBadWheel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return WheelFile{}, fmt.Errorf("%w: %w", ErrBadWheel, err)
	}
	if !st.Mode().IsRegular() {
		return WheelFile{}, fmt.Errorf("%w: %s: not a regular file", ErrBadWheel, path)
	}
	h := sha256.New()
	head := make([]byte, len(zipMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return WheelFile{}, fmt.Errorf("%w: read %s: %w", ErrBadWheel, path, err)
	}
	if !bytes.Equal(head[:n], zipMagic) {
		return WheelFile{}, fmt.Errorf("%w: %s: not a zip archive (every wheel is one): is it the wheel pip built?", ErrBadWheel, path)
	}
	h.Write(head)
	size, err := io.Copy(h, f)
	if err != nil {
		return WheelFile{}, fmt.Errorf("%w: read %s: %w", ErrBadWheel, path, err)
	}
	return WheelFile{Path: path, Name: name, Size: size + int64(n), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ParseWheelKey reads a store key builds/sha256/<hex>/<name>.whl as the
// wheel it names; the sha256 is the key's. Its errors match ErrBadWheel.
func ParseWheelKey(key string) (protocol.Wheel, error) {
	sum, _, ok := protocol.ParseBuildKey(key)
	if !ok {
		return protocol.Wheel{}, fmt.Errorf("%w: %q is not a wheel's store key: want %s<sha256 in lowercase hex>/<PEP 427 wheel name>.whl (the key --build-wheel prints)",
			ErrBadWheel, key, protocol.BuildPrefix+"sha256/")
	}
	return protocol.Wheel{URL: key, SHA256: sum}, nil
}

// WheelState is a step of staging one wheel (WheelEvent.State).
type WheelState string

// The steps StageWheels reports.
const (
	// WheelUploading: the file is being uploaded; Done bytes so far.
	WheelUploading WheelState = "uploading"
	// WheelUploaded: the file is stored at its key.
	WheelUploaded WheelState = "uploaded"
	// WheelPresent: the store already held the file's key (the same bytes),
	// so nothing was uploaded.
	WheelPresent WheelState = "present"
	// WheelFound: a wheel named by key is in the store.
	WheelFound WheelState = "found"
	// BuildRecorded: the build record of a commit (BuildRecord) was
	// written; Name is the commit, Key the record's key.
	BuildRecorded WheelState = "recorded"
	// BuildRecordKept: the commit's record names another build, or is not
	// a valid record, and it stays (WriteBuildRecord); Reason says which.
	BuildRecordKept WheelState = "record-kept"
	// BuildNotRecorded: the jobs' branch is not the baseline branch, so
	// their build is not the commit's; Reason says so.
	BuildNotRecorded WheelState = "not-recorded"
	// BuildRecordFailed: writing the record failed (the store's error is
	// Reason); the wheels are staged and the submit goes on, and a bisect
	// skips the commit.
	BuildRecordFailed WheelState = "record-failed"
)

// WheelEvent reports progress of StageWheels.
type WheelEvent struct {
	Name, Key string
	State     WheelState
	// Reason says why a build was not recorded (BuildRecordKept,
	// BuildNotRecorded, BuildRecordFailed); "" otherwise.
	Reason string
	// Size is the file's length (0 for a wheel named by key); Done the
	// bytes uploaded so far (WheelUploading).
	Size, Done int64
}

// bigWheel: uploads of files this large report their progress every tenth.
const bigWheel = 64 << 20

// StageWheels makes the wheels of jobs available to the workers, before
// the jobs are published: it stores every file at its content key with a
// conditional create, and checks that every other wheel the jobs name is in
// the store (ErrWheelMissing, naming the key).
//
// A key the store already holds is kept and not uploaded again when its
// object has the file's size (the key names the bytes); another size is an
// error naming the key. A file whose bytes changed after ReadWheelFile
// hashed them fails its upload, which then stores nothing.
//
// Then, for every commit its jobs name with wheels (Source.Commit and
// Source.Repo set) on the baseline branch (Source.Branch == baseline; ""
// is DefaultBaselineBranch), it records which wheels are that commit's
// build (WriteBuildRecord: once, the first build stays), so a bisect
// finds the build of each commit. A build of another branch (a pull
// request, a fork, a developer's wheel) is not recorded: the record of a
// commit is for good. Recording is best effort: an error writing a record
// is reported (BuildRecordFailed), not returned, as the wheels are staged.
//
// progress (nil: none) is called from StageWheels's goroutine: one
// WheelUploading event before an upload and one at every tenth of a file
// of 64 MiB or more, then WheelUploaded or WheelPresent for every file and
// WheelFound for every other wheel, then for every commit BuildRecorded,
// BuildRecordKept, BuildNotRecorded or BuildRecordFailed (nothing when
// the same build is recorded already).
func StageWheels(ctx context.Context, b storage.Bucket, files []WheelFile, jobs []*protocol.Job, baseline string, progress func(WheelEvent)) error {
	if progress == nil {
		progress = func(WheelEvent) {}
	}
	staged := map[string]bool{}
	for _, f := range files {
		if staged[f.Key()] {
			continue
		}
		if err := stageWheel(ctx, b, f, progress); err != nil {
			return err
		}
		staged[f.Key()] = true
	}
	for _, j := range jobs {
		for _, w := range j.Source.Wheels {
			if staged[w.URL] {
				continue
			}
			ok, err := b.Exists(ctx, w.URL)
			if err != nil {
				return fmt.Errorf("wheel %s: %w", w.URL, err)
			}
			if !ok {
				return fmt.Errorf("%w: %s (job %s names it): upload the file with --build-wheel, or check the key", ErrWheelMissing, w.URL, j.ID)
			}
			staged[w.URL] = true
			progress(WheelEvent{Name: w.Name(), Key: w.URL, State: WheelFound})
		}
	}
	recordBuilds(ctx, b, jobs, cmp.Or(baseline, gate.DefaultBaselineBranch), progress)
	return nil
}

// recordBuilds writes the build record of every commit the jobs name
// wheels of on the baseline branch, the first job's wheels for each.
func recordBuilds(ctx context.Context, b storage.Bucket, jobs []*protocol.Job, baseline string, progress func(WheelEvent)) {
	done := map[string]bool{}
	for _, j := range jobs {
		src := j.Source
		if len(src.Wheels) == 0 || src.Repo == "" || !protocol.ValidCommit(src.Commit) || done[src.Commit] {
			continue
		}
		done[src.Commit] = true
		e := WheelEvent{Name: src.Commit, Key: BuildRecordKey(src.Commit)}
		if src.Branch != baseline {
			e.State, e.Reason = BuildNotRecorded, fmt.Sprintf("branch %q is not the baseline branch %s", src.Branch, baseline)
			progress(e)
			continue
		}
		wrote, err := WriteBuildRecord(ctx, b, &BuildRecord{Repo: src.Repo, Commit: src.Commit, Wheels: src.Wheels})
		switch {
		case errors.Is(err, ErrBuildRecorded):
			e.State, e.Reason = BuildRecordKept, err.Error()
		case err != nil:
			e.State, e.Reason = BuildRecordFailed, err.Error()
		case wrote:
			e.State = BuildRecorded
		default:
			continue
		}
		progress(e)
	}
}

func stageWheel(ctx context.Context, b storage.Bucket, f WheelFile, progress func(WheelEvent)) error {
	key := f.Key()
	present := func() error {
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return fmt.Errorf("wheel %s: %w", key, err)
		}
		if a.Size != f.Size {
			return fmt.Errorf("wheel %s: the store holds %d bytes at this key but %s has %d: the object is not this wheel (a damaged upload?); delete it from the store and submit again",
				key, a.Size, f.Path, f.Size)
		}
		progress(WheelEvent{Name: f.Name, Key: key, State: WheelPresent, Size: f.Size})
		return nil
	}
	switch _, err := b.Attributes(ctx, key); {
	case err == nil:
		return present()
	case !errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("wheel %s: %w", key, err)
	}
	file, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("wheel %s: %w", key, err)
	}
	defer file.Close()
	progress(WheelEvent{Name: f.Name, Key: key, State: WheelUploading, Size: f.Size})
	r := &wheelReader{r: file, f: f, h: sha256.New(), progress: progress}
	err = b.Put(ctx, key, r, storage.IfAbsent(), storage.Size(f.Size), storage.ContentType("application/zip"))
	switch {
	case errors.Is(err, storage.ErrExists):
		return present() // another submit stored it meanwhile
	case err != nil:
		return fmt.Errorf("wheel %s: upload %s: %w", key, f.Path, err)
	}
	progress(WheelEvent{Name: f.Name, Key: key, State: WheelUploaded, Size: f.Size, Done: f.Size})
	return nil
}

// wheelReader reads a wheel file for its upload and fails at the end
// instead of reporting EOF when the bytes are not those hashed before, so
// the store never holds other bytes under the key.
type wheelReader struct {
	r        io.Reader
	f        WheelFile
	h        hash.Hash
	done     int64
	tenth    int64
	progress func(WheelEvent)
}

func (w *wheelReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.h.Write(p[:n])
	w.done += int64(n)
	if w.f.Size >= bigWheel {
		if t := w.done * 10 / w.f.Size; t > w.tenth && t < 10 {
			w.tenth = t
			w.progress(WheelEvent{Name: w.f.Name, Key: w.f.Key(), State: WheelUploading, Size: w.f.Size, Done: w.done})
		}
	}
	if errors.Is(err, io.EOF) {
		if sum := hex.EncodeToString(w.h.Sum(nil)); w.done != w.f.Size || sum != w.f.SHA256 {
			return n, fmt.Errorf("%s changed while it was submitted (%d bytes, sha256 %s; hashed %d bytes, %s)", w.f.Path, w.done, sum, w.f.Size, w.f.SHA256)
		}
	}
	return n, err
}
