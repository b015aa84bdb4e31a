package device_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ttsmi", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseSnapshotFixtures(t *testing.T) {
	t.Parallel()
	s, err := device.ParseSnapshot(readFixture(t, "n300_p150.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Chips) != 3 || s.Host["Hostname"] != "tt-lab-07" || s.Software["tt_smi"] != "3.0.15" || s.Time == "" {
		t.Fatalf("snapshot %+v", s)
	}
	l, p, r := s.Chips[0], s.Chips[1], s.Chips[2]
	if l.BoardType != "n300 L" || l.BusID != "0000:03:00.0" || l.BoardID != "100014511702034" || l.Remote() || l.Coords != "(0, 0, 0, 0)" {
		t.Errorf("n300 L: %+v", l)
	}
	if r.BoardType != "n300 R" || !r.Remote() || r.BoardID != l.BoardID || r.Index != 2 {
		t.Errorf("n300 R: %+v", r)
	}
	if p.BoardType != "p150a" || p.FirmwareVersion() != "18.6.0" || p.Telemetry["asic_temperature"] != "51.2" || p.Telemetry["power"] != "41.0" {
		t.Errorf("p150a: %+v", p)
	}
	if _, ok := p.Firmware["gddr_fw"]; ok {
		t.Error(`"N/A" firmware kept`)
	}

	old, err := device.ParseSnapshot(readFixture(t, "legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Chips) != 2 || old.Chips[0].FirmwareVersion() != "1.7.0.0" || old.Software != nil || old.Chips[1].Coords != "" {
		t.Errorf("legacy snapshot %+v", old)
	}
}

func TestParseSnapshotRejects(t *testing.T) {
	t.Parallel()
	wrap := func(entry string) string { return `{"device_info":[` + entry + `]}` }
	for name, tc := range map[string]struct{ in, want string }{
		"empty":              {"  ", "empty"},
		"array":              {`[]`, "not a JSON object"},
		"traceback":          {"Traceback (most recent call last):\n  File", "not a JSON object"},
		"truncated":          {`{"device_info":[{"board_info":{"bus_id":`, "unexpected EOF"},
		"trailing":           {`{"device_info":[]} {}`, "trailing"},
		"no device_info":     {`{"time":"x"}`, "device_info: missing"},
		"device_info string": {`{"device_info":"none"}`, "device_info"},
		"entry not object":   {wrap(`3`), "device_info[0]"},
		"no board_info":      {wrap(`{"telemetry":{}}`), "device_info[0].board_info: missing"},
		"board_type number":  {wrap(`{"board_info":{"board_type":150}}`), "board_type: not a string"},
		"bad bus id":         {wrap(`{"board_info":{"bus_id":"pci-1"}}`), "bus_id"},
		"bad board id":       {wrap(`{"board_info":{"board_id":"xyz!"}}`), "board_id"},
		"nested telemetry":   {wrap(`{"board_info":{},"telemetry":{"power":{"w":1}}}`), "telemetry.power"},
		"telemetry array":    {wrap(`{"board_info":{},"telemetry":[1]}`), "telemetry"},
		"host_info nested":   {`{"host_info":{"OS":[1]},"device_info":[]}`, "host_info.OS"},
		"board type newline": {wrap(`{"board_info":{"board_type":"n1\n50"}}`), "board_type"},
	} {
		_, err := device.ParseSnapshot([]byte(tc.in))
		if err == nil || !errors.Is(err, device.ErrSnapshot) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrSnapshot mentioning %q", name, err, tc.want)
		}
	}
	if s, err := device.ParseSnapshot([]byte(`{"device_info":[]}`)); err != nil || len(s.Chips) != 0 {
		t.Errorf("empty device_info: %v %v", s, err)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]device.BoardKind{
		"n150":         {Pool: "n150", Arch: device.ArchWormhole, Chips: 1},
		"n150 L":       {Pool: "n150", Arch: device.ArchWormhole, Chips: 1},
		"n300 L":       {Pool: "n300", Arch: device.ArchWormhole, Chips: 2},
		"n300 R":       {Pool: "n300", Arch: device.ArchWormhole, Chips: 2},
		"p150a":        {Pool: "p150", Arch: device.ArchBlackhole, Chips: 1},
		"P150B":        {Pool: "p150", Arch: device.ArchBlackhole, Chips: 1},
		"p300c":        {Pool: "p300", Arch: device.ArchBlackhole, Chips: 2},
		"p300":         {Pool: "p300", Arch: device.ArchBlackhole, Chips: 2},
		"wh_4u L":      {Pool: "galaxy", Arch: device.ArchWormhole, Chips: 32, System: true},
		"p100a":        {Pool: "p100", Arch: device.ArchBlackhole, Chips: 1},
		"tt-galaxy-wh": {Pool: "galaxy", Arch: device.ArchWormhole, Chips: 32, System: true},
		"tt-galaxy-bh": {Pool: "galaxy-bh", Arch: device.ArchBlackhole, Chips: 32, System: true},
	} {
		got, ok := device.KindOf(in)
		if !ok || got != want {
			t.Errorf("KindOf(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "N/A", "e150", "e75", "nb_cb", "bh-scrappy", "n301", "n300 X"} {
		if k, ok := device.KindOf(in); ok {
			t.Errorf("KindOf(%q) = %+v, want not ok", in, k)
		}
	}
}

func FuzzParseSnapshot(f *testing.F) {
	for _, name := range []string{"n150x2.json", "n300_p150.json", "legacy.json"} {
		f.Add(readFixture(f, name))
	}
	f.Add([]byte(`{"device_info":[{"board_info":{"board_type":"n300 R","bus_id":"N/A","board_id":"1"}}]}`))
	f.Add([]byte(`{"device_info":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := device.ParseSnapshot(data)
		if err != nil {
			if !errors.Is(err, device.ErrSnapshot) {
				t.Fatalf("error %v does not match ErrSnapshot", err)
			}
			return
		}
		for i, c := range s.Chips {
			if c.Index != i {
				t.Fatalf("chip %d has index %d", i, c.Index)
			}
			if c.BusID != "" && c.Remote() {
				t.Fatal("chip with a bus id is remote")
			}
			device.KindOf(c.BoardType)
		}
	})
}
