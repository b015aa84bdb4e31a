package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// ArtifactFile is a local file (or an in-memory one) to upload beside a
// result.
type ArtifactFile struct {
	// Name is the artifact's plain file name (CheckArtifactName).
	Name string
	// Path is the local file; used when Data is nil.
	Path string
	// Data, when not nil, is the artifact's content (a small log kept in
	// memory rather than written to a local file first); Path is then
	// ignored.
	Data []byte
}

// open returns the artifact's content and size.
func (f ArtifactFile) open() (io.ReadCloser, int64, error) {
	if f.Data != nil {
		return io.NopCloser(bytes.NewReader(f.Data)), int64(len(f.Data)), nil
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, 0, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, 0, err
	}
	return fh, st.Size(), nil
}

// UploadArtifacts uploads files to their artifact keys for r's job and
// attempt and returns their records (size, sha256). Artifacts are written
// once (IfAbsent): re-uploading the same attempt's artifact with the same
// content returns its record; other content at its key is an
// ErrArtifactConflict, never an overwrite.
func UploadArtifacts(ctx context.Context, b Bucket, r *protocol.Result, files []ArtifactFile) ([]protocol.Artifact, error) {
	out := make([]protocol.Artifact, 0, len(files))
	for _, f := range files {
		a, err := uploadArtifact(ctx, b, r, f)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func uploadArtifact(ctx context.Context, b Bucket, r *protocol.Result, f ArtifactFile) (protocol.Artifact, error) {
	if err := CheckArtifactName(f.Name); err != nil {
		return protocol.Artifact{}, err
	}
	key := ArtifactKey(r.Run, r.Job, r.Attempt, f.Name)
	fh, size, err := f.open()
	if err != nil {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	defer fh.Close()
	h := sha256.New()
	err = b.Put(ctx, key, io.TeeReader(fh, h), Size(size), IfAbsent())
	if errors.Is(err, ErrExists) {
		// Written once: the same attempt delivered again (a retried
		// Deliver) finds its own file; any other content is a conflict.
		a, serr := sameArtifact(ctx, b, key, f)
		if !errors.Is(serr, ErrNotFound) {
			return a, serr
		}
		// Refused, yet nothing there: what an interrupted write left.
		err := overRemnant(ctx, b, key, a.SHA256, func() (io.ReadCloser, error) {
			fh, _, err := f.open()
			return fh, err
		}, Size(size))
		switch {
		case err == nil:
			return a, nil // read back by overRemnant
		case errors.Is(err, ErrExists):
			return sameArtifact(ctx, b, key, f) // another writer's bytes
		}
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	if err != nil {
		return protocol.Artifact{}, err
	}
	return protocol.Artifact{Name: f.Name, Key: key, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// sameArtifact returns the record of f when the object at key holds f's
// content, else an ErrArtifactConflict.
func sameArtifact(ctx context.Context, b Bucket, key string, f ArtifactFile) (protocol.Artifact, error) {
	fh, size, err := f.open()
	if err != nil {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	same, err := sameContent(ctx, b, key, sum)
	if err != nil {
		// The record as it would be, for a caller that writes it over a
		// remnant (uploadArtifact).
		return protocol.Artifact{Name: f.Name, Key: key, Size: size, SHA256: sum}, fmt.Errorf("storage: artifact %s: %w", key, err)
	}
	if !same {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", key, ErrArtifactConflict)
	}
	return protocol.Artifact{Name: f.Name, Key: key, Size: size, SHA256: sum}, nil
}

// CheckDeliverable reports, before any I/O, whether r and files can ever be
// delivered: the run and job ids are valid (so the result key is) and every
// artifact name is a plain file name. Its errors match both ErrInvalidKey
// and, for ids, protocol.ErrInvalid; retrying or spooling cannot fix them.
func CheckDeliverable(r *protocol.Result, files []ArtifactFile) error {
	if r == nil {
		return fmt.Errorf("storage: deliver: %w: no result", ErrInvalidKey)
	}
	if err := protocol.ValidID("run", r.Run); err != nil {
		return fmt.Errorf("storage: deliver: %w: %w", ErrInvalidKey, err)
	}
	if err := protocol.ValidID("job", r.Job); err != nil {
		return fmt.Errorf("storage: deliver: %w: %w", ErrInvalidKey, err)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := CheckArtifactName(f.Name); err != nil {
			return fmt.Errorf("storage: deliver %s: %w", r.Job, err)
		}
		if seen[f.Name] {
			return fmt.Errorf("storage: deliver %s: %w: artifact name %q given twice", r.Job, ErrInvalidKey, f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// Deliver makes a result durable in b: it uploads the artifacts, then
// writes the result (with their records appended to r.Artifacts) once, with
// a conditional create. It always returns the result key.
//
// If the result is already there (an earlier attempt won, or this one was
// delivered before a crash), or the job's marker names a result under
// another date (the job was republished with another created_at), Deliver
// returns ErrExists and the key of the recorded result: the caller records
// nothing new. An artifact key holding other content is an
// ErrArtifactConflict. The one exception is a dead letter's result, which the
// result of a later attempt replaces (supersede.go). r is changed only when this call wrote the result, so a
// failed Deliver can be retried (or spooled) with the same r without
// duplicating artifact records. Errors from an unreachable store match
// ErrUnavailable; errors from CheckDeliverable match ErrInvalidKey.
func Deliver(ctx context.Context, b Bucket, r *protocol.Result, files []ArtifactFile) (string, error) {
	if err := CheckDeliverable(r, files); err != nil {
		return "", err
	}
	key := ResultKey(r.RunCreatedAt, r.Run, r.Job)
	// One result per job, whatever its created_at (jobmark.go).
	prev, err := claimJob(ctx, b, r.Run, r.Job, key)
	if err != nil {
		return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
	}
	if prev != key {
		replace, err := supersede(ctx, b, prev, r)
		if err != nil {
			return prev, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
		}
		if !replace {
			if err := noteLate(ctx, b, prev); err != nil {
				return prev, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
			}
			return prev, fmt.Errorf("storage: result %s (recorded at %s): %w", r.Job, prev, ErrExists)
		}
		if prev, err = reclaimJob(ctx, b, r.Run, r.Job, key); err != nil {
			return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
		}
		if prev != key {
			return prev, fmt.Errorf("storage: result %s (recorded at %s): %w", r.Job, prev, ErrExists)
		}
	}
	res := *r
	if len(files) > 0 {
		// Skip the artifact upload when the result is already final.
		ok, err := b.Exists(ctx, key)
		if err != nil {
			return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
		}
		if ok {
			// A dead letter's result yields to a later attempt (supersede.go).
			replace, err := supersede(ctx, b, key, r)
			if err != nil {
				return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
			}
			if !replace {
				if err := noteLate(ctx, b, key); err != nil {
					return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
				}
				return key, fmt.Errorf("storage: result %s: %w", r.Job, ErrExists)
			}
		}
		start := time.Now()
		arts, err := UploadArtifacts(ctx, b, r, files)
		if err != nil {
			return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
		}
		res.Artifacts = append(slices.Clip(r.Artifacts), arts...)
		// upload_s is the artifact upload; the result write follows it.
		res.Phases.UploadS = time.Since(start).Seconds()
	}
	_, err = PutResult(ctx, b, &res)
	if errors.Is(err, ErrExists) {
		// A dead letter's result yields to a later attempt (supersede.go).
		replace, serr := supersede(ctx, b, key, r)
		switch {
		case serr != nil:
			err = serr
		case replace:
			_, err = PutResult(ctx, b, &res)
		}
	}
	if err != nil {
		if errors.Is(err, ErrExists) {
			return key, fmt.Errorf("storage: result %s: %w", r.Job, ErrExists)
		}
		return key, fmt.Errorf("storage: deliver %s: %w", r.Job, err)
	}
	r.Artifacts = res.Artifacts
	r.Phases.UploadS = res.Phases.UploadS
	return key, nil
}
