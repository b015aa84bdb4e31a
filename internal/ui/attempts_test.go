package ui_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
)

// A suspected regression and its confirmation repeats are one job of the
// run page with its attempts, and its job page shows them too.
func TestRunPageShowsAttempts(t *testing.T) {
	t.Parallel()
	cfg, publish := newFarm(t)
	jobs := fleettest.SimJobs(t, "ui-confirm", 1, map[string]string{sim.LabelSamplesPerSec: "900", sim.LabelRepeatSamplesPerSec: "1000"})
	plantHistory(t, cfg.Store, jobs[0], 1000)
	publish("ui-confirm", jobs)
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool { return len(fleettest.Results(t, cfg.Store, "ui-confirm")) == 1 })
	v, err := gate.JudgeRun(t.Context(), gate.RunInput{Run: "ui-confirm", Store: cfg.Store, Gate: true, GateConfig: gate.GateConfig{Repeats: 2}})
	if err != nil {
		t.Fatal(err)
	}
	c := &submit.Confirmer{JS: cfg.JS, Store: cfg.Store, Repeats: 2, Log: zerolog.Nop()}
	if _, n, err := c.Requeue(t.Context(), v.Report); err != nil || n != 2 {
		t.Fatalf("requeue: %v, %d queued", err, n)
	}
	fleettest.Eventually(t, 30*time.Second, "the repeats' results", func() bool { return len(fleettest.Results(t, cfg.Store, "ui-confirm")) == 3 })
	hs := serve(t, cfg)
	code, body := get(t, hs.URL+"/runs/ui-confirm")
	if code != 200 {
		t.Fatalf("run page: %d\n%s", code, body)
	}
	if n := strings.Count(body, "data-job="); n != 1 {
		t.Errorf("the run page lists %d jobs, want 1 (the repeats are its attempts)", n)
	}
	// The sim's figures jitter by a fraction of a sample/s.
	attempts := regexp.MustCompile(`attempts (89\d|90\d)\.\d \(ui-host/sim-\d\), \d+\.\d \(ui-host/sim-\d\), \d+\.\d \(ui-host/sim-\d\) · median (99\d|100\d)\.\d`)
	for _, want := range []string{"not-reproduced", "not reproduced", "PASS", "1/1 done", "confirmation repeats 2/2 done",
		"Gate: baseline main: median of the last 10 passed runs since the series&#39; last change point, threshold 5%, noise band 3σ (MAD within segments), at least 5 results, a suspected regression confirmed by 2 repeats."} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q:\n%s", want, body)
		}
	}
	// The samples/s beside the gate's change is the median it is of.
	if !regexp.MustCompile(`<td class="num">(99\d|100\d)\.\d \(median\)</td>`).MatchString(body) {
		t.Errorf("run page: the job's samples/s is not the median its change is of:\n%s", body)
	}
	if !attempts.MatchString(body) {
		t.Errorf("run page lacks the attempts (%s):\n%s", attempts, body)
	}
	code, body = get(t, hs.URL+"/runs/ui-confirm/jobs/"+jobs[0].ID)
	if code != 200 || !regexp.MustCompile(`attempts (89\d|90\d)\.\d`).MatchString(body) || !regexp.MustCompile(`median (99\d|100\d)\.\d`).MatchString(body) {
		t.Errorf("job page: %d, want the attempts and their median\n%s", code, body)
	}
}
