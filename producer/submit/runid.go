package submit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// RunID derives a run id. With a commit it is deterministic — the commit,
// the repository and a digest of what is being run (runDigest) — so a
// re-triggered CI job for the same commit and matrix re-attaches to its run
// instead of running it twice. Without one it is fresh: the time plus a
// digest.
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

// runDigest is what a derived run id hashes of m: the matrix as JSON, with
// each wheel (and the one-wheel source.build) by its file name only, not
// its sha256 or its store key's hash part. A wheel's name says which build
// it is (distribution, version, tags); its bytes change with every
// `pip wheel` that does not set SOURCE_DATE_EPOCH, and a re-run of CI that
// rebuilt the commit must re-attach to the commit's run, not measure it
// twice (the run keeps its first build: Submitter.Submit). A matrix
// without wheels digests as it always did.
func runDigest(m *Matrix) ([]byte, error) {
	c := *m
	c.Source.Wheels = make([]WheelSpec, len(m.Source.Wheels))
	for i, w := range m.Source.Wheels {
		c.Source.Wheels[i] = WheelSpec{URL: protocol.Wheel{URL: w.URL}.Name()}
	}
	if c.Source.Build.URL != "" {
		c.Source.Build.URL, c.Source.Build.SHA256 = protocol.Wheel{URL: c.Source.Build.URL}.Name(), ""
	}
	return json.Marshal(&c)
}
