package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/benchfleet/benchfleet/protocol"
)

// ArtifactFile is a local file to upload beside a result.
type ArtifactFile struct {
	// Name is the artifact's plain file name (CheckArtifactName).
	Name string
	// Path is the local file.
	Path string
}

// UploadArtifacts uploads files to their artifact keys for r's job and
// attempt and returns their records (size, sha256). Re-uploading the same
// attempt's artifact overwrites it, which is harmless: it is the same file.
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
	fh, err := os.Open(f.Path)
	if err != nil {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return protocol.Artifact{}, fmt.Errorf("storage: artifact %s: %w", f.Name, err)
	}
	h := sha256.New()
	if err := b.Put(ctx, key, io.TeeReader(fh, h), Size(st.Size())); err != nil {
		return protocol.Artifact{}, err
	}
	return protocol.Artifact{Name: f.Name, Key: key, Size: st.Size(), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Deliver makes a result durable in b: it uploads the artifacts, records
// them in r, then writes the result once. If the result is already there
// (an earlier attempt won), Deliver returns the key and ErrExists: the
// caller records nothing new.
func Deliver(ctx context.Context, b Bucket, r *protocol.Result, files []ArtifactFile) (string, error) {
	if len(files) > 0 {
		key := ResultKey(r.RunCreatedAt, r.Run, r.Job)
		// Skip the artifact upload when the result is already final.
		if ok, err := b.Exists(ctx, key); err == nil && ok {
			return key, fmt.Errorf("storage: result %s: %w", r.Job, ErrExists)
		}
		arts, err := UploadArtifacts(ctx, b, r, files)
		if err != nil {
			return "", err
		}
		r.Artifacts = append(r.Artifacts, arts...)
	}
	key, err := PutResult(ctx, b, r)
	if errors.Is(err, ErrExists) {
		return key, fmt.Errorf("storage: result %s: %w", r.Job, ErrExists)
	}
	return key, err
}
