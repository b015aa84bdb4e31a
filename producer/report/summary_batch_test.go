package report_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// A harness may run another batch than the job asked for (tt-xla's vision
// tests fix theirs): the row shows the batch that ran, beside which the
// samples/s was measured, and the result's note says so.
func TestRowsShowTheBatchThatRan(t *testing.T) {
	t.Parallel()
	m := &protocol.RunManifest{Run: "r", CreatedAt: time.Now().UTC(), Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "n150", BatchSize: 16}}}
	res := &protocol.Result{Job: "j1", Run: "r", Status: protocol.StatusPassed,
		Measurements: protocol.Measurements{BatchSize: 8, TotalSamples: 128, TotalTimeS: 1, SamplesPerSec: 128},
		Notes:        []string{"the harness ran batch size 8, not the job's 16"}}
	rows := runstate.Rows(m, map[string]*runstate.JobState{"j1": {Job: m.Jobs[0], Result: res}})
	if len(rows) != 1 || rows[0].BatchSize != 8 || !strings.Contains(rows[0].Reason, "batch size 8") {
		t.Fatalf("rows %+v, want batch 8 and the note", rows)
	}
}

// A job that did not finish says which phase it was in, not the word
// "phase" (the kind of its last event).
func TestRowsOfAnUnfinishedJobNameItsPhase(t *testing.T) {
	t.Parallel()
	m := &protocol.RunManifest{Run: "r", CreatedAt: time.Now().UTC(), Jobs: []protocol.ManifestJob{{ID: "j1", Pool: "sim"}}}
	rows := runstate.Rows(m, map[string]*runstate.JobState{"j1": {Job: m.Jobs[0], Kind: protocol.EventPhase, Phase: "timing"}})
	if len(rows) != 1 || rows[0].Reason != "in timing" {
		t.Fatalf("rows %+v, want the reason \"in timing\"", rows)
	}
}

// Shorten cuts on a character boundary, never through one.
func TestShortenCutsOnARune(t *testing.T) {
	t.Parallel()
	got := runstate.Shorten("ab€cd", 4) // € is 3 bytes: 4-1 would cut it
	if got != "ab…" || !utf8.ValidString(got) {
		t.Fatalf("Shorten = %q, want \"ab…\"", got)
	}
}
