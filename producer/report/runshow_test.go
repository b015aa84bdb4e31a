package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
)

// `runs show` says what each job not ended is doing (running in its
// phase, queued) and never calls it unfinished, which only a wait that
// timed out says; a job that passed after a retry says why the earlier
// attempt was handed back.
func TestWriteRunShowSaysRunningAndQueued(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &protocol.RunManifest{Run: "show-1", CreatedAt: created, Submitter: "ci", Priority: protocol.PriorityNormal, Jobs: []protocol.ManifestJob{
		{ID: "jrunning", Pool: "sim", Runner: "sim", Model: "simnet", BatchSize: 1, DataFormat: "bfloat16"},
		{ID: "jqueued", Pool: "sim", Runner: "sim", Model: "simnet", BatchSize: 2, DataFormat: "bfloat16"},
		{ID: "jretried", Pool: "n150", Runner: "forge", Model: "resnet50", BatchSize: 8, DataFormat: "bfloat16"},
	}}
	w := &watch.Watcher{Manifest: m}
	states := w.Initial()
	runstate.ApplyEvent(states["jrunning"], &protocol.Event{Kind: protocol.EventClaimed, Worker: "w1", Device: "sim-0", Attempt: 1})
	runstate.ApplyEvent(states["jrunning"], &protocol.Event{Kind: protocol.EventPhase, Phase: "timing", Worker: "w1", Device: "sim-0", Attempt: 1})
	runstate.ApplyEvent(states["jretried"], &protocol.Event{Kind: protocol.EventRetrying, Worker: "tt-1", Device: "tt0", Attempt: 1,
		Message: "device tt0 hung in timing; reset, quarantined (retry in 2s)"})
	states["jretried"].Result = &protocol.Result{Job: "jretried", Run: "show-1", Status: protocol.StatusPassed, Attempt: 2,
		Measurements: protocol.Measurements{SamplesPerSec: 123}}
	var out bytes.Buffer
	if err := WriteRunShow(&out, m, states); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"run show-1: 3 jobs, created 2026-12-01T10:00:00Z by ci", "running: timing", " queued",
		"1 retry before: attempt 1 on tt-1/tt0: device tt0 hung"} {
		if !strings.Contains(s, want) {
			t.Errorf("runs show: no %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "unfinished") {
		t.Errorf("runs show calls jobs unfinished:\n%s", s)
	}
}
