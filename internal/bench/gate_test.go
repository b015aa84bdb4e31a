package bench

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/gate"
)

// gateSeed is the default config with seed and repeats.
func gateSeed(seed uint64, repeats int) GateConfig {
	c := DefaultGateConfig()
	c.Seed, c.Repeats = seed, repeats
	return c
}

func TestRunGateReport(t *testing.T) {
	t.Parallel()
	rep, err := RunGate(t.Context(), gateSeed(7, gate.DefaultRepeats))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean+rep.Planted != 1000 || rep.Clean < 400 || rep.Planted < 400 {
		t.Fatalf("series %d clean + %d planted, want 1000 about half each", rep.Clean, rep.Planted)
	}
	if rep.RepeatsRun != rep.Suspects*gate.DefaultRepeats {
		t.Errorf("%d repeats for %d suspects, want %d each", rep.RepeatsRun, rep.Suspects, gate.DefaultRepeats)
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
	again, err := RunGate(t.Context(), gateSeed(7, gate.DefaultRepeats))
	if err != nil {
		t.Fatal(err)
	}
	if *again != *rep {
		t.Errorf("seed 7 twice: %+v and %+v", rep, again)
	}
	other, _ := RunGate(t.Context(), gateSeed(8, gate.DefaultRepeats))
	if *other == *rep {
		t.Errorf("seeds 7 and 8 gave the same report")
	}
}

// The confirmation repeats draw from their own stream: the series (the
// clean/planted split, histories, candidates) and so the figures without
// confirmation are the same for every --confirm at one seed.
func TestRunGateSeriesDoNotDependOnRepeats(t *testing.T) {
	t.Parallel()
	one, err := RunGate(t.Context(), gateSeed(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	three, err := RunGate(t.Context(), gateSeed(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	if one.Clean != three.Clean || one.Planted != three.Planted || one.FalsePositives != three.FalsePositives || one.Detected != three.Detected {
		t.Errorf("seed 1: --confirm 1 gave %d/%d clean/planted, %d false positives, %d detected; --confirm 3 %d/%d, %d, %d",
			one.Clean, one.Planted, one.FalsePositives, one.Detected, three.Clean, three.Planted, three.FalsePositives, three.Detected)
	}
	if one.RepeatsRun != one.Suspects || three.RepeatsRun != 3*three.Suspects {
		t.Errorf("repeats run: %d for %d suspects with 1, %d for %d with 3", one.RepeatsRun, one.Suspects, three.RepeatsRun, three.Suspects)
	}
}

// A value out of range, zero included (a zero is not a default), is a
// *ConfigError naming its flag.
func TestGateConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		edit func(*GateConfig)
		want string
	}{
		{func(c *GateConfig) { c.Series = 1 }, "--series 1"},
		{func(c *GateConfig) { c.Series = 0 }, "--series 0"},
		{func(c *GateConfig) { c.Planted = 1 }, "--planted 1"},
		{func(c *GateConfig) { c.Planted = 0 }, "--planted 0"},
		{func(c *GateConfig) { c.Drop = -0.1 }, "--drop -0.1"},
		{func(c *GateConfig) { c.Drop = 0 }, "--drop 0"},
		{func(c *GateConfig) { c.Repeats = 21 }, "--confirm 21"},
		{func(c *GateConfig) { c.Repeats = 0 }, "--confirm 0"},
		{func(c *GateConfig) { c.History = -1 }, "History -1"},
		{func(c *GateConfig) { c.Gate.Threshold = 2 }, "Threshold 2"},
	} {
		cfg := DefaultGateConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want a *ConfigError naming %q", c.want, err, c.want)
		}
	}
	if c := DefaultGateConfig(); c.Validate() != nil {
		t.Errorf("the defaults do not validate: %v", c.Validate())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := RunGate(ctx, DefaultGateConfig()); err == nil {
		t.Error("RunGate with an ended ctx: no error")
	}
}
