package storage

import (
	"fmt"
	"strings"
	"time"
)

// Layout prefixes (docs/SCHEMA.md, "Storage layout"). Every key of a benchfleet store starts with
// one of them.
const (
	PrefixRuns      = "runs/"
	PrefixResults   = "results/v1/"
	PrefixArtifacts = "artifacts/"
	PrefixIndex     = "index/v1/"
	// PrefixAccepted holds the regressions people accepted
	// (`results accept`), one write-once record each.
	PrefixAccepted = "accepted/v1/"
)

// AcceptedKey is where the acceptance of the step a series (by its
// SeriesID) took at commit lives.
func AcceptedKey(seriesID, commit string) string {
	return PrefixAccepted + seriesID + "/" + commit + ".json"
}

// DatePartition is the partition value of a run created at t: its UTC date.
func DatePartition(t time.Time) string { return t.UTC().Format("2006-01-02") }

// ResultKey is where the result of job in run lives. runCreated is the run's
// creation time, so that one run lives in one date partition.
func ResultKey(runCreated time.Time, run, job string) string {
	return fmt.Sprintf("%sdate=%s/run=%s/%s.json", PrefixResults, DatePartition(runCreated), run, job)
}

// ArtifactKey is where an artifact of one attempt of a job lives. name must
// be a plain file name (CheckArtifactName).
func ArtifactKey(run, job string, attempt int, name string) string {
	return fmt.Sprintf("%s%s/%s/attempt-%d/%s", PrefixArtifacts, run, job, attempt, name)
}

// ManifestKey is where a run's manifest lives.
func ManifestKey(run string) string { return PrefixRuns + run + "/manifest.json" }

// CheckArtifactName accepts plain file names only: no separators, no "..",
// at most 128 bytes, so an artifact can never escape its folder.
func CheckArtifactName(name string) error {
	if name == "" || len(name) > 128 || name == "." || name == ".." ||
		strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%w: artifact name %q must be a plain file name", ErrInvalidKey, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: artifact name %q has a control character", ErrInvalidKey, name)
		}
	}
	return nil
}

// ResultKeyParts splits a result key into its date, run and job. ok is false
// for keys that are not result keys.
func ResultKeyParts(key string) (date, run, job string, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixResults)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "date=") || !strings.HasPrefix(parts[1], "run=") ||
		!strings.HasSuffix(parts[2], ".json") {
		return "", "", "", false
	}
	return parts[0][5:], parts[1][4:], strings.TrimSuffix(parts[2], ".json"), true
}
