//go:build unix

package fault

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
)

// A worker process SIGKILLed while it runs two jobs is listed as lost
// once its heartbeat lapses: `fleet status` shows a LOST row with the jobs
// it was running (and `lost: true` in JSON), and the dashboard's home page
// and the run's page name it lost with its jobs, instead of dropping it
// while its jobs still read "running".
func TestKilledWorkerIsListedLost(t *testing.T) {
	t.Parallel()
	bin := clitest.Binary(t)
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 5 * time.Minute} // no redelivery while the test looks
	storeDir := t.TempDir()
	store, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	w := clitest.Start(t, bin, "worker", "--nats", srv.ClientURL(), "--store", "file://"+storeDir,
		"--slots", "sim=2", "--id", "doomed", "--log-format", "json", "--work-dir", t.TempDir())
	const run = "lost-run"
	jobs := fleettest.SimJobs(t, run, 2, map[string]string{"sim.duration": "10m"})
	fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	fleet := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"fleet", "status", "--nats", srv.ClientURL()}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fleet status: %v\n%s", err, out)
		}
		return string(out)
	}
	fleettest.Eventually(t, 30*time.Second, "doomed to run both jobs", func() bool {
		return strings.Count(fleet(), " busy ") == 2
	})
	w.Kill()
	killed := time.Now()

	var table string
	fleettest.Eventually(t, 2*protocol.WorkerStaleAfter, "doomed listed as lost", func() bool {
		table = fleet()
		return strings.Contains(table, "LOST")
	})
	t.Logf("fleet status %s after the SIGKILL:\n%s", time.Since(killed).Round(time.Second), table)
	for _, want := range []string{"doomed (LOST: no heartbeat)", "lost (was busy)", "1 worker, 2 devices: 0 busy, 0 idle, 0 quarantined, 2 lost",
		"worker doomed on", "is lost: no heartbeat since", jobs[0].ID, jobs[1].ID} {
		if !strings.Contains(table, want) {
			t.Errorf("fleet status: no %q", want)
		}
	}
	var sts []protocol.WorkerStatus
	if err := json.Unmarshal([]byte(fleet("--format", "json")), &sts); err != nil || len(sts) != 1 || !sts[0].Lost {
		t.Errorf("fleet status --format json: %+v (%v), want doomed with lost: true", sts, err)
	}

	s, err := ui.New(ui.Config{JS: js, Topology: topo, Store: store, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	for page, wants := range map[string][]string{
		"/":            {`class="tag lost"`, `<span class="lost" id="lost-count">2 lost</span>`, "/runs/" + run + "/jobs/" + jobs[0].ID},
		"/runs/" + run: {"Lost worker doomed on", "2 jobs, redelivered after the ack wait"},
	} {
		resp, err := http.Get(hs.URL + page)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		for _, want := range wants {
			if !strings.Contains(b.String(), want) {
				t.Errorf("dashboard %s: no %q", page, want)
			}
		}
	}
}
