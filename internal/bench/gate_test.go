package bench

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer"
)

func TestRunGateReport(t *testing.T) {
	t.Parallel()
	rep, err := RunGate(t.Context(), GateConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean+rep.Planted != 1000 || rep.Clean < 400 || rep.Planted < 400 {
		t.Fatalf("series %d clean + %d planted, want 1000 about half each", rep.Clean, rep.Planted)
	}
	if rep.RepeatsRun != rep.Suspects*producer.DefaultRepeats {
		t.Errorf("%d repeats for %d suspects, want %d each", rep.RepeatsRun, rep.Suspects, producer.DefaultRepeats)
	}
	// Confirmation can only fail what it suspects: no more confirmed
	// failures than suspects, and it must clear most false positives.
	if rep.ConfirmedFalsePositives+rep.ConfirmedDetected > rep.Suspects || rep.ConfirmedFalsePositives*2 > rep.FalsePositives {
		t.Errorf("confirmed %d false positives + %d detected of %d suspects (alone: %d false positives)",
			rep.ConfirmedFalsePositives, rep.ConfirmedDetected, rep.Suspects, rep.FalsePositives)
	}
	// The goal, for this seed.
	if f, d := rep.ConfirmedFalsePositiveRate(), rep.ConfirmedDetectionRate(); f > 0.01 || d < 0.95 {
		t.Errorf("confirmed: false positives %.1f%%, detection %.1f%%; goal ≤ 1%% and ≥ 95%%", 100*f, 100*d)
	}
	var out bytes.Buffer
	rep.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := regexp.MustCompile(`^false positives \d+\.\d% detection \d+\.\d% \(confirmed: false positives \d+\.\d% detection \d+\.\d%\)$`)
	if !last.MatchString(lines[len(lines)-1]) || lines[len(lines)-1] != rep.Summary() {
		t.Errorf("last line %q is not the summary line", lines[len(lines)-1])
	}
	// The same seed, the same report; another seed, another.
	again, err := RunGate(t.Context(), GateConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if *again != *rep {
		t.Errorf("seed 7 twice: %+v and %+v", rep, again)
	}
	other, _ := RunGate(t.Context(), GateConfig{Seed: 8})
	if *other == *rep {
		t.Errorf("seeds 7 and 8 gave the same report")
	}
}

func TestGateConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []GateConfig{{Series: 1}, {Planted: 1}, {Drop: -0.1}, {Repeats: 21}, {History: -1}, {Gate: producer.GateConfig{Threshold: 2}}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := RunGate(ctx, GateConfig{}); err == nil {
		t.Error("RunGate with an ended ctx: no error")
	}
}
