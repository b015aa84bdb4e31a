package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// The navigation's "fleet & runs" is not a dead end: /fleet and /runs lead
// to the home page's sections (they answered 404).
func TestFleetAndRunsPathsLeadHome(t *testing.T) {
	t.Parallel()
	cfg, _ := newFarm(t)
	hs := serve(t, cfg)
	for path, want := range map[string]string{"/fleet": "/#fleet", "/runs": "/#runs"} {
		resp, err := noRedirect.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %s to %q, want 302 to %s", path, resp.Status, resp.Header.Get("Location"), want)
		}
	}
	if code, body := get(t, hs.URL+"/fleet"); code != http.StatusOK || !strings.Contains(body, `id="fleet"`) {
		t.Errorf("GET /fleet followed: %d, want the home page with its fleet", code)
	}
}

// A job whose first attempt was handed back (its board failed: a hang, a
// reset) and whose second passed says so on the run page, instead of a
// bare "passed"; the home page's queue warns that a pool no worker
// serves keeps its jobs waiting, as submit does; the header shows the
// dashboard's version.
func TestRunPageShowsRetriesAndHomeWarnsOfUnservedPools(t *testing.T) {
	t.Parallel()
	cfg, submit := newFarm(t)
	hs := serve(t, cfg)
	retried := fleettest.SimJobs(t, "ui-retried", 1, map[string]string{"sim.fail": "transient", "sim.fail_attempts": "1", "sim.duration": "10ms"})
	submit("ui-retried", retried)
	fleettest.Eventually(t, 60*time.Second, "the job to pass on its second attempt", func() bool {
		r := fleettest.Results(t, cfg.Store, "ui-retried")[retried[0].ID]
		return r != nil && r.Status == protocol.StatusPassed
	})
	_, body := get(t, hs.URL+"/runs/ui-retried")
	for _, want := range []string{"1 retry before: attempt 1 on ui-host/", "sim: transient failure injected"} {
		if !strings.Contains(body, want) {
			t.Errorf("run page of a job that passed after a retry: no %q", want)
		}
	}

	unserved := fleettest.SimJobs(t, "ui-unserved", 2, nil)
	for _, j := range unserved {
		j.Pool, j.Runner = "cpu", protocol.RunnerCPU
		j.Benchmark.Model = "mlp"
		j.ID = protocol.JobID(j.Run, j.Cell())
	}
	submit("ui-unserved", unserved)
	_, body = get(t, hs.URL+"/")
	if !strings.Contains(body, "pool cpu: no board in service: no live worker serves it: its jobs wait in the queue") {
		t.Errorf("home page: no warning that pool cpu has no worker while 2 of its jobs wait")
	}
	if !strings.Contains(body, `id="version"`) {
		t.Errorf("home page: no version in the header")
	}
}
