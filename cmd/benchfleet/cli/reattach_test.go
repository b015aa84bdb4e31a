package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// Through the command line (the re-attach rules are producer's, tested in
// producer/submit/reattach_test.go): a producer rewrites the manifest of a CI run in
// bench-runs with another source.commit. The trusted CI's re-attaching
// `submit --wait --gate --github-token` refuses the run, naming the
// difference, and posts no commit status (to no commit).
func TestReattachRefusesRewrittenSource(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 2)
	matrix := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(matrix, []byte(ciMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	gh := newRecorder(t)
	args := f.args("submit", "--matrix", matrix, "--run", "reattach-1", "--commit", sha, "--branch", "feature-r", "--repo", "acme/bench",
		"--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s", "--gate", "--github-token", "test-token", "--github-api", gh.URL)
	if code, out, errOut := ciRun(t, f.args("submit", "--matrix", matrix, "--run", "reattach-1", "--commit", sha,
		"--branch", "feature-r", "--repo", "acme/bench", "--ack-wait", ciAckWait.String())...); code != ExitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	_, js := fleettest.Connect(t, f.url)
	topo, err := topology.Open(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	e, err := topo.Runs.Get(t.Context(), protocol.ManifestKey("reattach-1"))
	if err != nil {
		t.Fatal(err)
	}
	var m protocol.RunManifest
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		t.Fatal(err)
	}
	m.Source.Repo, m.Source.Commit = "evil/repo", "feedfacefeedfacefeedfacefeedfacefeedface"
	data, _ := json.Marshal(&m)
	if _, err := topo.Runs.Put(t.Context(), protocol.ManifestKey("reattach-1"), data); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ciRun(t, args...)
	if code != ExitUsage || !strings.Contains(errOut, "source.commit") || !strings.Contains(errOut, "feedface") {
		t.Errorf("re-attach to a rewritten manifest: exit %d, want %d naming source.commit\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, out, errOut)
	}
	if sts := gh.got(); len(sts) != 0 {
		t.Errorf("%d commit statuses posted, want none: %s", len(sts), sts[0].path)
	}
	// `results gate` sets a status only on the commit it is given, and
	// only when the run's is the same.
	code, out, errOut = ciRun(t, f.args("results", "gate", "--run", "reattach-1", "--github-token", "test-token",
		"--github-api", gh.URL, "--commit", "1111111111111111111111111111111111111111", "--repo", "acme/bench")...)
	if sts := gh.got(); len(sts) != 0 || !strings.Contains(errOut, "no commit status set") {
		t.Errorf("results gate for another commit: exit %d, %d statuses, want none\n%s%s", code, len(sts), out, errOut)
	}
}
