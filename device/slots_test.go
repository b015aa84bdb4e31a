package device_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device"
)

func TestBuiltinSlots(t *testing.T) {
	t.Parallel()
	devs, err := device.BuiltinSlots("cpu=2, sim=3")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range devs {
		ids = append(ids, d.ID)
		if d.Runner != d.Pool || d.Chips != 1 || !d.Healthy || d.Path != "" || d.Visible != "" {
			t.Errorf("slot %+v", d)
		}
	}
	if want := []string{"cpu-0", "cpu-1", "sim-0", "sim-1", "sim-2"}; !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if devs, err := device.BuiltinSlots(" "); err != nil || devs != nil {
		t.Errorf("empty spec: %v, %v", devs, err)
	}
	if devs, _ := device.BuiltinSlots("sim=256"); len(devs) != 256 {
		t.Errorf("sim=256: %d slots", len(devs))
	}
	for spec, want := range map[string]string{
		"cpu":         `"cpu" is not pool=count`,
		"cpu=":        `"cpu=" is not pool=count`,
		"=2":          `"=2" is not pool=count`,
		"cpu=2,":      `"" is not pool=count`,
		"n150=1":      `pool "n150" is not a built-in pool`,
		"gpu=1":       `pool "gpu"`,
		"cpu=0":       `cpu count "0"`,
		"cpu=257":     `cpu count "257"`,
		"sim=-1":      `sim count "-1"`,
		"sim=two":     `sim count "two"`,
		"cpu=1,cpu=2": `pool "cpu" appears twice`,
		"cpu=1;sim=2": `cpu count "1;sim=2"`,
	} {
		_, err := device.BuiltinSlots(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("BuiltinSlots(%q) error %v, want one containing %s", spec, err, want)
		}
	}
}
