package wheels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// A commit's build record: which wheels in the store are the build of a
// commit. The wheels themselves are stored by content (BuildKey), which
// says nothing of the commit they were built from; StageWheels writes a
// record for every commit whose jobs name wheels on the baseline branch
// (CI's `submit --build-wheel` of each main commit), and a bisect finds the
// build of each commit it measures by it.

// SchemaBuildRecord is the schema of a commit's build record.
const SchemaBuildRecord = "benchfleet.build-record/v1"

// maxBuildRecord bounds a record read from the store: 16 wheels of long
// names are a few KiB.
const maxBuildRecord = 64 << 10

// ErrNoBuild is matched (errors.Is) by ReadBuildRecord's error for a
// commit the store holds no build record of.
var ErrNoBuild = errors.New("no stored build")

// ErrBadBuildRecord is matched by the errors of DecodeBuildRecord (and so
// ReadBuildRecord) about a record that is not a valid one.
var ErrBadBuildRecord = errors.New("bad build record")

// NoRecordError is ReadBuildRecord's error for a commit without a record.
type NoRecordError struct{ key string }

func (e *NoRecordError) Error() string {
	return "no stored build: the store has no " + e.key + " (CI's submit --build-wheel of the commit writes it)"
}

func (e *NoRecordError) Is(target error) bool { return target == ErrNoBuild }

// BuildRecord is the build of one commit: builds/commits/<commit>.json.
type BuildRecord struct {
	Schema string `json:"schema"`
	// Repo is the repository the commit is of, as jobs name it
	// (protocol.Source.Repo), e.g. tenstorrent/tt-forge-onnx.
	Repo string `json:"repo"`
	// Commit is the full commit.
	Commit string `json:"commit"`
	// Wheels are the build, as jobs name it (protocol.Source.Wheels).
	Wheels []protocol.Wheel `json:"wheels"`
}

// BuildRecordKey is the store key of commit's build record.
func BuildRecordKey(commit string) string {
	return protocol.BuildPrefix + "commits/" + commit + ".json"
}

// Validate checks the record's fields.
func (r *BuildRecord) Validate() error {
	switch {
	case r.Schema != SchemaBuildRecord:
		return &protocol.FieldError{Field: "schema", Rule: fmt.Sprintf("must be %q (got %q)", SchemaBuildRecord, r.Schema)}
	case r.Repo == "" || len(r.Repo) > 200:
		return &protocol.FieldError{Field: "repo", Rule: "is required (at most 200 bytes)"}
	case !protocol.ValidCommit(r.Commit):
		return &protocol.FieldError{Field: "commit", Rule: fmt.Sprintf("must be a full commit, lowercase hex (got %q)", r.Commit)}
	case len(r.Wheels) == 0 || len(r.Wheels) > protocol.MaxWheels:
		return &protocol.FieldError{Field: "wheels", Rule: fmt.Sprintf("must name 1 to %d wheels (got %d)", protocol.MaxWheels, len(r.Wheels))}
	}
	for i, w := range r.Wheels {
		if sum, _, ok := protocol.ParseBuildKey(w.URL); !ok || sum != w.SHA256 {
			return &protocol.FieldError{Field: fmt.Sprintf("wheels[%d]", i), Rule: fmt.Sprintf("must be a wheel's store key %ssha256/<hex>/<name>.whl with its sha256 (got %q, %q)", protocol.BuildPrefix, w.URL, w.SHA256)}
		}
	}
	return nil
}

// DecodeBuildRecord reads a record strictly: unknown fields, trailing data,
// a record of another commit than want and any invalid field are errors.
func DecodeBuildRecord(data []byte, want string) (*BuildRecord, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r BuildRecord
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w of %s: %w", ErrBadBuildRecord, want, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w of %s: data after the record", ErrBadBuildRecord, want)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w of %s: %w", ErrBadBuildRecord, want, err)
	}
	if r.Commit != want {
		return nil, fmt.Errorf("%w of %s: it is the record of commit %s", ErrBadBuildRecord, want, r.Commit)
	}
	return &r, nil
}

// ReadBuildRecord reads the build record of commit (a full commit). A
// commit without one is ErrNoBuild.
func ReadBuildRecord(ctx context.Context, b storage.Bucket, commit string) (*BuildRecord, error) {
	key := BuildRecordKey(commit)
	rc, err := b.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, &NoRecordError{key: key}
	}
	if err != nil {
		return nil, fmt.Errorf("build record of %s: %w", commit, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBuildRecord+1))
	if err != nil {
		return nil, fmt.Errorf("build record of %s: %w", commit, err)
	}
	if len(data) > maxBuildRecord {
		return nil, fmt.Errorf("%w of %s: %s is over %d bytes", ErrBadBuildRecord, commit, key, maxBuildRecord)
	}
	return DecodeBuildRecord(data, commit)
}

// WriteBuildRecord stores r once (a conditional create): the first record
// of a commit stays. It reports whether it wrote r. A record already there
// with the same content is no error; one naming another build (a wheel
// rebuilt from the same commit with other bytes), or one that is not a
// valid record, is kept, and the error matches ErrBuildRecorded and says
// which.
func WriteBuildRecord(ctx context.Context, b storage.Bucket, r *BuildRecord) (wrote bool, err error) {
	r.Schema = SchemaBuildRecord
	if err := r.Validate(); err != nil {
		return false, fmt.Errorf("build record of %s: %w", r.Commit, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return false, fmt.Errorf("build record of %s: %w", r.Commit, err)
	}
	key := BuildRecordKey(r.Commit)
	err = b.Put(ctx, key, bytes.NewReader(data), storage.IfAbsent(), storage.Size(int64(len(data))), storage.ContentType("application/json"))
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, storage.ErrExists):
		return false, fmt.Errorf("build record of %s: %w", r.Commit, err)
	}
	old, err := ReadBuildRecord(ctx, b, r.Commit)
	switch {
	case errors.Is(err, ErrBadBuildRecord):
		return false, fmt.Errorf("%w: %s is not a valid record (%v)", ErrBuildRecorded, key, err)
	case err != nil:
		return false, err
	case !sameBuild(old, r):
		return false, fmt.Errorf("%w: %s names another build of the commit (%s)", ErrBuildRecorded, key, wheelNames(old.Wheels))
	}
	return false, nil
}

// ErrBuildRecorded is matched by WriteBuildRecord's error when the
// commit's record names another build than the one given, or is not a
// valid record; the record is kept.
var ErrBuildRecorded = errors.New("another record is kept")

func sameBuild(a, b *BuildRecord) bool {
	if a.Repo != b.Repo || a.Commit != b.Commit || len(a.Wheels) != len(b.Wheels) {
		return false
	}
	for i := range a.Wheels {
		if a.Wheels[i] != b.Wheels[i] {
			return false
		}
	}
	return true
}

func wheelNames(ws []protocol.Wheel) string {
	var b bytes.Buffer
	for i, w := range ws {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(w.Name())
	}
	return b.String()
}
