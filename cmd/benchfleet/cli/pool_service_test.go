package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// `submit --wait` on a pool whose every board is out
// of service (one quarantined, one on a draining worker) says so, naming
// each board and why, once on stderr and in the summary; `runs watch` of
// the run says it too.
func TestWaitSaysNoBoardInService(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{AckWait: ciAckWait})
	now := time.Now().UTC()
	for _, st := range []protocol.WorkerStatus{
		{Schema: protocol.SchemaWorker, ID: "tt-host", Host: "tt-host", Time: now, Devices: []protocol.DeviceStatus{
			{ID: "tt0", Pool: "n150", Runner: "forge", State: protocol.DeviceQuarantined, Reason: "reset failed: tt-smi -r exit 1"}}},
		{Schema: protocol.SchemaWorker, ID: "tt-drain", Host: "tt-drain", Time: now, Draining: true, Devices: []protocol.DeviceStatus{
			{ID: "tt0", Pool: "n150", Runner: "forge", State: protocol.DeviceIdle}}},
	} {
		data, _ := json.Marshal(st)
		if _, err := topo.Workers.Put(t.Context(), st.ID, data); err != nil {
			t.Fatal(err)
		}
	}
	const want = "pool n150: no board in service: tt-drain/tt0 out of service (worker draining), tt-host/tt0 quarantined (reset failed: tt-smi -r exit 1)"
	store := "file://" + t.TempDir()
	md := filepath.Join(t.TempDir(), "summary.md")
	code, out, errOut := ciRun(t, "submit", "--nats", srv.ClientURL(), "--store", store, "--log-level", "warn",
		"--pool", "n150", "--test", "forge/test/benchmark/test_vision.py::test_resnet50", "--model", "resnet50",
		"--batch-size", "8", "--loop-count", "32", "--run", "noboard", "--wait", "--timeout", "1s", "--summary-md", md)
	if code != ExitTimeout {
		t.Fatalf("submit --wait: exit %d, want 3\n%s%s", code, out, errOut)
	}
	if n := strings.Count(errOut, want); n != 1 {
		t.Errorf("stderr says %d times %q, want once:\n%s", n, want, errOut)
	}
	if strings.Contains(errOut, "no live worker serves pool n150") {
		t.Errorf("stderr says no live worker serves n150, but two do, with every board out:\n%s", errOut)
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	// The Markdown escapes punctuation: compare the text.
	if !strings.Contains(strings.ReplaceAll(string(data), `\`, ""), want) {
		t.Errorf("the summary does not name the quarantined board:\n%s", data)
	}

	code, out, errOut = ciRun(t, "runs", "watch", "noboard", "--timeout", "1s", "--nats", srv.ClientURL(), "--store", store, "--log-level", "warn")
	if code != ExitTimeout || strings.Count(errOut, want) != 1 {
		t.Errorf("runs watch: exit %d, want 3 and %q once on stderr\n%s%s", code, want, out, errOut)
	}
}
