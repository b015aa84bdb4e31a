package ui_test

import (
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/fleettest"
)

// Manifests anyone who may write bench-runs can plant: one whose header
// claims 10^12 jobs in one chunk (a reader that sizes its job list from
// job_count preallocates 120 TB and dies), and one with an invalid run name
// and a future created_at (sorted first, its state unreadable: the home
// page stopped listing at it). The dashboard stays up, lists the good run,
// and says which manifests it skipped.
func TestServeSkipsBadManifests(t *testing.T) {
	cfg, submit := newFarm(t)
	submit("ui-good", fleettest.SimJobs(t, "ui-good", 1, nil))
	ctx := t.Context()
	for key, val := range map[string]string{
		"huge.manifest":  `{"schema":"benchfleet.manifest/v1","run":"huge","created_at":"2099-01-01T00:00:00Z","chunks":1,"job_count":1000000000000}`,
		"huge2.manifest": `{"chunks":1,"job_count":1e12}`,
		"future.manifest": `{"schema":"benchfleet.manifest/v1","run":"bad name/..","created_at":"2099-06-01T00:00:00Z",` +
			`"jobs":[{"id":"x","pool":"sim"}]}`,
	} {
		if _, err := cfg.Topology.Runs.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	hs := serve(t, cfg)
	code, body := get(t, hs.URL+"/")
	if code != 200 {
		t.Fatalf("home page: %d\n%s", code, body)
	}
	if !strings.Contains(body, "ui-good") {
		t.Errorf("home page does not list the good run:\n%s", body)
	}
	if !strings.Contains(body, "skipped") || !strings.Contains(body, "huge") {
		t.Errorf("home page does not say the bad manifests were skipped:\n%s", body)
	}
	if code, body := get(t, hs.URL+"/runs/huge"); code == 200 {
		t.Errorf("run page of the 10^12 manifest: %d, want an error\n%s", code, body)
	}
	if code, _ := get(t, hs.URL+"/runs/ui-good"); code != 200 {
		t.Errorf("run page of the good run after the bad ones: %d", code)
	}
}
