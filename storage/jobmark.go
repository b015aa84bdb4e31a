package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// One result per job, whatever the created_at it was published with: the
// result key holds the run's date, so a job republished with another
// created_at would land a second result under another date. Before its
// result is written, Deliver creates the job's marker (IfAbsent) naming the
// result's key; a delivery whose key differs from the one its job's marker
// names is refused with ErrExists, like a second result at the same key
// (the dead letter's result, which a later attempt replaces, still yields:
// supersede.go).

// PrefixJobs holds one marker per job with a result: JobMarkerKey.
const PrefixJobs = "jobs/v1/"

// JobMarkerKey is the marker of job in run: a small JSON document naming
// the key of the job's one result ({"result": key}).
func JobMarkerKey(run, job string) string {
	return fmt.Sprintf("%srun=%s/%s.json", PrefixJobs, run, job)
}

type jobMarker struct {
	Result string `json:"result"`
}

// RecordedResultKey returns the key of the result of job in run: the key
// its marker names, or want when the job has no marker (no result recorded
// since markers were written; a result of an older worker is at want if
// anywhere). A marker that does not name a result key of this run and job
// is an error.
func RecordedResultKey(ctx context.Context, b Bucket, run, job, want string) (string, error) {
	rc, err := b.Get(ctx, JobMarkerKey(run, job))
	if errors.Is(err, ErrNotFound) {
		return want, nil
	}
	if err != nil {
		return want, fmt.Errorf("storage: job marker %s: %w", job, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return want, fmt.Errorf("storage: job marker %s: %w", job, err)
	}
	var m jobMarker
	if err := json.Unmarshal(data, &m); err != nil {
		return want, fmt.Errorf("storage: job marker %s: %w", job, err)
	}
	if _, r, j, ok := ResultKeyParts(m.Result); !ok || r != run || j != job {
		return want, fmt.Errorf("storage: job marker %s names %q, not a result key of this job", job, m.Result)
	}
	return m.Result, nil
}

// claimJob creates job's marker naming key unless it exists, and returns
// the key the marker names (key when this call created it).
func claimJob(ctx context.Context, b Bucket, run, job, key string) (string, error) {
	data, err := json.Marshal(jobMarker{Result: key})
	if err != nil {
		return "", err
	}
	err = b.Put(ctx, JobMarkerKey(run, job), bytes.NewReader(data), IfAbsent(), ContentType("application/json"), Size(int64(len(data))))
	switch {
	case err == nil:
		return key, nil
	case errors.Is(err, ErrExists):
		return RecordedResultKey(ctx, b, run, job, key)
	default:
		return "", fmt.Errorf("storage: job marker %s: %w", job, err)
	}
}

// reclaimJob points job's marker at key after the result it named was
// replaced (a dead letter's, superseded): it deletes the marker and claims
// the job again.
func reclaimJob(ctx context.Context, b Bucket, run, job, key string) (string, error) {
	if err := b.Delete(ctx, JobMarkerKey(run, job)); err != nil && !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("storage: job marker %s: %w", job, err)
	}
	return claimJob(ctx, b, run, job, key)
}

// ErrArtifactConflict is matched by the error of a Deliver that found one
// of its artifact keys holding other content: artifacts are written once,
// and a record whose sha256 does not match the stored file is never made.
var ErrArtifactConflict = errors.New("storage: artifact exists with other content")

// sameContent reports whether the object at key has the given sha256.
func sameContent(ctx context.Context, b Bucket, key, sum string) (bool, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == sum, nil
}

// RunSince is the date a query for run's results may start at: its
// results' date partition, found through the first job marker of the run
// (one listing and one read), or, for a run without markers (none of its
// results recorded since markers were written, or no such run), fallback.
// A reader answering a request for a run by name bounds its scan so.
func RunSince(ctx context.Context, b Bucket, run string, fallback time.Time) time.Time {
	for key, err := range b.List(ctx, PrefixJobs+"run="+run+"/") {
		if err != nil {
			return fallback
		}
		job, ok := strings.CutSuffix(key[len(PrefixJobs+"run="+run+"/"):], ".json")
		if !ok || strings.Contains(job, "/") {
			continue
		}
		rk, err := RecordedResultKey(ctx, b, run, job, "")
		if err != nil || rk == "" {
			return fallback
		}
		date, _, _, _ := ResultKeyParts(rk)
		d, perr := time.Parse("2006-01-02", date)
		if perr != nil {
			return fallback
		}
		return d
	}
	return fallback
}
