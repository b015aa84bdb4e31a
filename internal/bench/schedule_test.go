package bench

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestScheduleConfigValidate(t *testing.T) {
	t.Parallel()
	def := DefaultScheduleConfig()
	def.Dir = t.TempDir()
	with := func(f func(*ScheduleConfig)) ScheduleConfig { c := def; f(&c); return c }
	for _, tc := range []struct {
		cfg  ScheduleConfig
		want string
	}{
		{ScheduleConfig{}, "Dir"},
		{with(func(c *ScheduleConfig) { c.Jobs = -1 }), "--jobs"},
		{with(func(c *ScheduleConfig) { c.Jobs = 0 }), "--jobs"},
		{with(func(c *ScheduleConfig) { c.Jobs, c.Long = 4, 5 }), "--long"},
		{with(func(c *ScheduleConfig) { c.Slots = 1000 }), "--slots"},
		{with(func(c *ScheduleConfig) { c.Slots = 0 }), "--slots"},
		{with(func(c *ScheduleConfig) { c.Minute = time.Microsecond }), "--minute"},
		{with(func(c *ScheduleConfig) { c.Minute = 0 }), "--minute"},
		{def, ""},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

// The matrix is the seed's: the same durations for the same seed, Long of
// them 20-40 minutes and the rest 1-3.
func TestDrawDurations(t *testing.T) {
	t.Parallel()
	cfg := ScheduleConfig{Jobs: 30, Long: 3, Minute: time.Millisecond, Seed: 9}
	a, b := drawDurations(cfg), drawDurations(cfg)
	if !slices.Equal(a, b) {
		t.Fatal("one seed drew two matrices")
	}
	cfg.Seed = 10
	if slices.Equal(a, drawDurations(cfg)) {
		t.Error("two seeds drew one matrix")
	}
	long := 0
	for _, d := range a {
		switch {
		case d >= 20*time.Millisecond && d <= 40*time.Millisecond:
			long++
		case d < time.Millisecond || d > 3*time.Millisecond:
			t.Errorf("duration %s is neither 1-3 nor 20-40 minutes", d)
		}
	}
	if long != 3 {
		t.Errorf("%d long jobs, want 3", long)
	}
}

// Both passes really run on the fleet: every makespan is at least the
// bound no schedule can beat, the second pass is ordered from the
// first's history (every series has one), and the report ends with the
// line a script reads.
func TestRunScheduleReport(t *testing.T) {
	t.Parallel()
	rep, err := RunSchedule(t.Context(), ScheduleConfig{Jobs: 12, Long: 2, Slots: 3, Minute: 5 * time.Millisecond, Seed: 3, Dir: t.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound != max(rep.Longest, rep.Total/3) || rep.Longest < 100*time.Millisecond {
		t.Errorf("bound %s, longest %s, total %s", rep.Bound, rep.Longest, rep.Total)
	}
	for name, p := range map[string]SchedulePass{"matrix": rep.Matrix, "expected": rep.Expected} {
		if p.Makespan < rep.Bound || p.Ratio < 1 {
			t.Errorf("%s order: makespan %s (%.3fx) below the bound %s", name, p.Makespan, p.Ratio, rep.Bound)
		}
	}
	if rep.Matrix.Schedule.ByHistory {
		t.Errorf("the first pass was ordered: %s", rep.Matrix.Schedule)
	}
	if s := rep.Expected.Schedule; !s.ByHistory || s.WithoutHistory != 0 || s.Jobs != 12 {
		t.Errorf("the second pass: %s, want all 12 ordered by history", s)
	}
	lines := strings.Split(strings.TrimSpace(rep.String()), "\n")
	if !regexp.MustCompile(`^makespan \d+\.\d\dx the lower bound \(matrix order \d+\.\d\dx\)$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}
