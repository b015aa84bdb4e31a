package device

import (
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]version{
		"6.3.0":             {6, 3, 0},
		"3.0.15\n":          {3, 0, 15},
		"v4.1.2":            {4, 1, 2},
		"tt-smi 5.0.1":      {5, 0, 1},
		"0.9.3.dev12+g1a2b": {0, 9, 3},
		"4.0.0rc1":          {4, 0, 0},
		"5":                 {5, 0, 0},
		"5.":                {5, 0, 0},
		"0.9":               {0, 9, 0},
		"2.2.3-alpha":       {2, 2, 3},
	} {
		if got, ok := parseVersion(in); !ok || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "N/A", "unknown", "tt-smi", "1234567.0.0", "v", strings.Repeat(" ", 300) + "1.0.0"} {
		if got, ok := parseVersion(in); ok {
			t.Errorf("parseVersion(%q) = %v, want not ok", in, got)
		}
	}
}

func TestResetFormOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]resetForm{
		"3.0.15": resetByIndex, "2.2.3": resetByIndex, "5.0.0": resetByTarget, "6.3.0": resetByTarget,
		"4.1.2": resetFormUnknown, "junk": resetFormUnknown,
	} {
		v, ok := parseVersion(in)
		if got := resetFormOf(v, ok); got != want {
			t.Errorf("resetFormOf(%s) = %v, want %v", in, got, want)
		}
	}
	if resetFormFromHelp("Reset targets: UMD logical IDs, PCI BDFs (e.g. 0000:0a:00.0)") != resetByTarget ||
		resetFormFromHelp("Provide list of PCI index or a json file with reset configs.") != resetByIndex {
		t.Error("resetFormFromHelp")
	}
	dev := Device{BDFs: []string{"0000:02:00.0", "0000:03:00.0"}}
	if got := resetArgument(resetByTarget, dev, []int{2, 3}); got != "0000:02:00.0,0000:03:00.0" {
		t.Errorf("by target: %q", got)
	}
	if got := resetArgument(resetByTarget, Device{}, []int{2, 3}); got != "/dev/tenstorrent/2,/dev/tenstorrent/3" {
		t.Errorf("by target without BDFs: %q", got)
	}
	if got := resetArgument(resetByIndex, dev, []int{2, 3}); got != "2,3" {
		t.Errorf("by index: %q", got)
	}
}

func TestVisibleDevices(t *testing.T) {
	t.Parallel()
	bdfs := []string{"0000:02:00.0", "0000:03:00.0"}
	for _, tc := range []struct {
		sw   map[string]string
		bdfs []string
		want string
	}{
		{nil, bdfs, "0000:02:00.0,0000:03:00.0"},
		{map[string]string{"tt_umd": "0.9.2"}, bdfs, "0000:02:00.0,0000:03:00.0"},
		{map[string]string{"tt_umd": "0.9.5"}, bdfs, "0000:02:00.0,0000:03:00.0"},
		{map[string]string{"tt_umd": "0.9.1"}, bdfs, "2,3"},
		{map[string]string{"tt_umd": "0.1.1"}, bdfs, "2,3"},
		{map[string]string{"tt_umd": "garbage"}, bdfs, "0000:02:00.0,0000:03:00.0"},
		{nil, []string{"0000:02:00.0", ""}, "2,3"},
		{nil, nil, "2,3"},
	} {
		if got := VisibleDevices([]int{2, 3}, tc.bdfs, tc.sw); got != tc.want {
			t.Errorf("VisibleDevices(%v, %v) = %q, want %q", tc.bdfs, tc.sw, got, tc.want)
		}
	}
}

// Every pool a board type maps to is one jobs can ask for.
func TestBoardKindPoolsAreProtocolPools(t *testing.T) {
	t.Parallel()
	for bt, k := range boardKinds {
		if !protocol.ValidPool(k.Pool) || protocol.IsBuiltinPool(k.Pool) {
			t.Errorf("board type %s maps to pool %q, not a Tenstorrent pool of protocol.Pools", bt, k.Pool)
		}
	}
}

// FuzzParseVersion: a tt-smi --version line or host_sw_vers value never
// panics the parser, and what it accepts prints back as a version it
// accepts again.
//
//	go test ./device -run '^$' -fuzz '^FuzzParseVersion$' -fuzztime 30s
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"6.3.0", "3.0.15\n", "v4.1.2", "tt-smi 5.0.1", "0.9.3.dev12+g1a2b", "4.0.0rc1", "", "N/A", "9999999", "1..2", "v.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseVersion(s)
		if !ok {
			return
		}
		if v.major < 0 || v.minor < 0 || v.patch < 0 || v.major > 999999 || v.minor > 999999 || v.patch > 999999 {
			t.Fatalf("parseVersion(%q) = %v", s, v)
		}
		if again, ok := parseVersion(v.String()); !ok || again != v {
			t.Fatalf("parseVersion(%q) = %v, but %q parses as %v, %v", s, v, v.String(), again, ok)
		}
		resetFormOf(v, ok)
	})
}
