package cli

import (
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A manifest claiming 10^12 jobs (anyone who may write bench-runs can
// plant one) does not kill `runs list` or `runs show`: list skips it with a
// warning and lists the good run, show refuses it with an error naming it,
// and a submit re-attaching to it fails instead of sizing anything from it.
func TestRunsSkipBadManifest(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	fleettest.Submit(t, js, topo, store, "good-run", protocol.PriorityNormal, fleettest.SimJobs(t, "good-run", 1, nil))
	bad := `{"schema":"benchfleet.manifest/v1","run":"huge","created_at":"2099-01-01T00:00:00Z","chunks":1,"job_count":1000000000000}`
	if _, err := topo.Runs.Put(t.Context(), protocol.ManifestKey("huge"), []byte(bad)); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		code, out, errOut := ciRun(t, "runs", "list", "--nats", srv.ClientURL(), "--format", format)
		if code != ExitOK || !strings.Contains(out, "good-run") || strings.Contains(out, "huge") {
			t.Errorf("runs list --format %s: exit %d, want 0 listing good-run only\nstdout:\n%s\nstderr:\n%s", format, code, out, errOut)
		}
		if !strings.Contains(errOut, "huge") || !strings.Contains(errOut, "skipped") {
			t.Errorf("runs list --format %s: no warning naming the skipped run:\n%s", format, errOut)
		}
	}
	code, out, errOut := ciRun(t, "runs", "show", "huge", "--nats", srv.ClientURL())
	if code == ExitOK || !strings.Contains(errOut, "job_count") {
		t.Errorf("runs show huge: exit %d, want an error naming job_count\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = ciRun(t, "submit", "--nats", srv.ClientURL(), "--store", "file://"+t.TempDir(),
		"--pool", "sim", "--model", "simnet", "--batch-size", "4", "--loop-count", "8", "--run", "huge", "--wait", "--timeout", "2s")
	if code == ExitOK || code == ExitTimeout || !strings.Contains(errOut, "bad manifest") {
		t.Errorf("re-attaching submit: exit %d, want an error naming the bad manifest\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
