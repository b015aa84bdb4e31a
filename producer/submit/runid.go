package submit

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// RunID derives a run id. With a commit it is deterministic — the commit,
// the repository and a digest of what is being run — so a re-triggered CI
// job for the same commit and matrix re-attaches to its run instead of
// running it twice. Without one it is fresh: the time plus a digest.
func RunID(src SourceSpec, digest string, now time.Time) string {
	if src.Commit != "" {
		h := sha256.Sum256([]byte(src.Repo + "\x00" + src.Commit + "\x00" + digest))
		commit := nonID.ReplaceAllString(src.Commit, "")
		if len(commit) > 12 {
			commit = commit[:12]
		}
		repo := src.Repo
		if i := strings.LastIndex(repo, "/"); i >= 0 {
			repo = repo[i+1:]
		}
		repo = strings.Trim(nonID.ReplaceAllString(repo, "-"), "-_")
		if len(repo) > 24 {
			repo = repo[:24]
		}
		id := "ci-"
		if repo != "" {
			id += repo + "-"
		}
		return id + commit + "-" + hex.EncodeToString(h[:3])
	}
	return protocol.NewRunID(now, digest)
}
