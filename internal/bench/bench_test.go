package bench

import (
	"errors"
	"testing"
	"time"
)

// Median of an even count is the mean of the two middle values (it was the
// upper one), of any order; the input is left as it was.
func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0.9, 1.1}, 1},
		{[]float64{5, 5, 1, 9}, 5},
	} {
		in := append([]float64(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("Median sorted its input: %v, was %v", tc.in, in)
			}
		}
	}
	ds := []time.Duration{40 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 20 * time.Millisecond}
	if got := Median(ds); got != 25*time.Millisecond {
		t.Errorf("Median(%v) = %s, want 25ms", ds, got)
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	s := spreadOf([]float64{0.2, 0.4, 0.1, 0.3})
	if s != (Spread{Median: 0.25, Min: 0.1, Max: 0.4}) {
		t.Fatalf("spread %+v", s)
	}
	if got, want := s.of(4), "0.250 (median of 4 rounds; min 0.100, max 0.400)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]time.Duration{0: 1, 0.5: 5, 0.9: 9, 0.99: 10, 1: 10} {
		if got := Quantile(ds, q); got != want {
			t.Errorf("Quantile(%v) = %d, want %d", q, got, want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of none is not 0")
	}
}

// Every Validate names the flag (or field) it refuses, as a ConfigError.
func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	dispatch := func(f func(*DispatchConfig)) func() error {
		c := DispatchConfig{Jobs: 10, Slots: 2, Rounds: 1}
		f(&c)
		return c.Validate
	}
	for _, tc := range []struct {
		validate func() error
		want     string
	}{
		{dispatch(func(c *DispatchConfig) { c.Jobs = 0 }), "--jobs 0: want 1..1000000"},
		{dispatch(func(c *DispatchConfig) { c.Slots = 257 }), "--slots 257: want 1..256"},
		{dispatch(func(c *DispatchConfig) { c.JobDuration = -1 }), "--job-duration -1ns: want 0..1h"},
		{dispatch(func(c *DispatchConfig) { c.Probes = -1 }), "--probes -1: want 0..10000"},
		{dispatch(func(c *DispatchConfig) { c.Rounds = 0 }), "--rounds 0: want 1..100"},
		{(&SubmitConfig{Jobs: 0, Rounds: 1}).Validate, "--jobs 0: want 1.."},
		{(&QueryConfig{Results: 1, Days: 0, Repeat: 1}).Validate, "--days 0: must be at least 1"},
		{(&WorkerCPUConfig{JobDuration: time.Millisecond, Exe: "x"}).Validate, "--job-duration 1ms: want 1s..1h"},
		{(&BoxConfig{Jobs: 200000}).Validate, "jobs 200000: must be between 1 and 100000"},
		{(&BuildsConfig{Rounds: 21}).Validate, "--rounds 21: want 1..20"},
		{(&ChaosConfig{Jobs: 1, Workers: 0}).Validate, "workers 0: must be between 1 and 64"},
	} {
		err := tc.validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("Validate: %v, want a ConfigError %q", err, tc.want)
		}
	}
}
