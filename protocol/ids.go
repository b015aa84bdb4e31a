package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// MaxIDLen bounds run and job ids.
const MaxIDLen = 64

// ValidID checks a run or job id: 1..64 characters of [A-Za-z0-9_-], starting
// with a letter or digit. Such ids are safe as NATS subject tokens, KV keys,
// and path segments (no dots, slashes or shell metacharacters).
func ValidID(field, id string) error {
	if id == "" {
		return fieldErr(field, "is required")
	}
	if len(id) > MaxIDLen {
		return fieldErr(field, "must be at most %d characters", MaxIDLen)
	}
	if !shaped(id, classAlnum, classID, 0) { // ^[A-Za-z0-9][A-Za-z0-9_-]*$
		return fieldErr(field, "must match [A-Za-z0-9][A-Za-z0-9_-]* (got %q)", truncate(id, 40))
	}
	return nil
}

// JobID derives the deterministic id of a job from its run and the canonical
// form of its matrix cell, so that re-submitting a run publishes the same ids.
func JobID(run, cell string) string {
	h := sha256.Sum256([]byte(run + "\x00" + cell))
	return "j" + hex.EncodeToString(h[:8])
}

// NewRunID makes a fresh run id from a time and a short random-ish suffix
// derived from seed (e.g. the user and the matrix).
func NewRunID(t time.Time, seed string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", t.UnixNano(), seed)))
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(h[:3])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
