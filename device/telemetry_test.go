package device_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

// hwmon readings in tt-kmd's units (µW, m°C) become W and °C; a board
// without hwmon falls back to the tt-smi snapshot ("power", "asic_temperature"),
// at most once per SnapshotInterval; Summarize keeps only the window.
func TestTTSamplerHwmonAndSnapshotFallback(t *testing.T) {
	t.Parallel()
	h := harnesstest.NewTTHost(t, 2)
	for name, v := range map[string]string{"power1_input": "87500000\n", "temp1_input": "51250\n"} {
		if err := os.WriteFile(filepath.Join(h.Hwmon(0), name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := device.DiscoverConfig{TTSMI: h.TTSMI, DevRoot: h.DevRoot, SysRoot: h.Sys}
	s := device.NewTTSampler(cfg)
	ctx := t.Context()
	got, err := s.Sample(ctx, device.Device{ID: "tt0", Nodes: []int{0}})
	if err != nil || got.PowerW != 87.5 || got.TemperatureC != 51.25 || got.Source != "hwmon" {
		t.Fatalf("hwmon sample %+v, %v", got, err)
	}
	// Board 1 loses its hwmon: the snapshot (fake tt-smi: " 21.0" W, "44.3" C) answers, then rests.
	if err := os.RemoveAll(filepath.Dir(h.Hwmon(1))); err != nil {
		t.Fatal(err)
	}
	got, err = s.Sample(ctx, device.Device{ID: "tt1", Nodes: []int{1}})
	if err != nil || got.PowerW != 21 || got.TemperatureC != 44.3 || got.Source != "tt-smi" {
		t.Fatalf("snapshot sample %+v, %v", got, err)
	}
	if _, err := s.Sample(ctx, device.Device{ID: "tt1", Nodes: []int{1}}); !errors.Is(err, device.ErrNoSample) {
		t.Fatalf("second snapshot within %s: %v, want ErrNoSample", device.SnapshotInterval, err)
	}
	t0 := time.Now()
	samples := []device.Sample{
		{Time: t0, PowerW: 10, TemperatureC: 40},
		{Time: t0.Add(time.Second), PowerW: 100, TemperatureC: 60},
		{Time: t0.Add(2 * time.Second), PowerW: 120, TemperatureC: math.NaN()},
		{Time: t0.Add(3 * time.Second), PowerW: 5, TemperatureC: 30},
	}
	tm := device.Summarize(samples, t0.Add(500*time.Millisecond), t0.Add(2500*time.Millisecond))
	if tm.Samples != 2 || tm.PowerW.Min != 100 || tm.PowerW.Max != 120 || tm.PowerW.Mean != 110 ||
		tm.TemperatureC.Min != 60 || tm.TemperatureC.Max != 60 {
		t.Fatalf("summary %+v %+v %+v", tm, tm.PowerW, tm.TemperatureC)
	}
	if device.Summarize(samples, t0.Add(10*time.Second), t0.Add(11*time.Second)) != nil {
		t.Fatal("a window without samples has a summary")
	}
}
