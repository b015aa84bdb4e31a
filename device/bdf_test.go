package device_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

func ttConfig(t *testing.T, h *harnesstest.TTHost) device.DiscoverConfig {
	return device.DiscoverConfig{TTSMI: h.TTSMI, DevRoot: h.DevRoot, SysRoot: h.Sys, Log: zerolog.New(zerolog.NewTestWriter(t))}
}

func discoverByID(t *testing.T, cfg device.DiscoverConfig) map[string]device.Device {
	t.Helper()
	devs, err := device.Discover(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]device.Device{}
	for _, d := range devs {
		out[d.ID] = d
	}
	return out
}

// resets returns the `tt-smi -r` calls so far.
func resets(t *testing.T, h *harnesstest.TTHost) []string {
	var out []string
	for _, c := range h.Calls(t) {
		if strings.HasPrefix(c, "tt-smi -r") {
			out = append(out, c)
		}
	}
	return out
}

// With device nodes 0, 2 and 3 (board 1 gone), the board of node 2 is the
// second in BDF order: tt-umd >= 0.9.3 would read TT_VISIBLE_DEVICES=2 as
// node 3's board. Its slot names it by PCI address.
func TestDiscoverSparseNodesNamesBoardsByBDF(t *testing.T) {
	t.Parallel()
	h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3})
	devs := discoverByID(t, ttConfig(t, h))
	if len(devs) != 3 {
		t.Fatalf("Discover: %+v", devs)
	}
	for _, n := range h.Nodes {
		d := devs["tt"+strconv.Itoa(n)]
		if d.Visible != h.BDFs[n] || !slices.Equal(d.Nodes, []int{n}) || !slices.Equal(d.BDFs, []string{h.BDFs[n]}) ||
			d.Path != filepath.Join(h.DevRoot, strconv.Itoa(n)) || !d.Healthy {
			t.Errorf("node %d: %+v, want Visible %s", n, d, h.BDFs[n])
		}
	}
	if devs["tt2"].Visible != "0000:02:00.0" {
		t.Errorf("tt2 Visible %q", devs["tt2"].Visible)
	}

	// A tt-umd older than 0.9.2 reads only node numbers there.
	old := harnesstest.NewTTHostNodes(t, []int{0, 2, 3}, harnesstest.WithUMDVersion("0.9.1"))
	if d := discoverByID(t, ttConfig(t, old))["tt2"]; d.Visible != "2" || d.BDFs[0] != "0000:02:00.0" {
		t.Errorf("tt-umd 0.9.1: %+v, want Visible 2", d)
	}
}

// A reset names the board as the host's tt-smi reads -r: by BDF for
// tt-smi >= 5 (where `-r 2` would be a logical id: node 3's board here),
// by node number for 3.0.x (where -r is a /dev/tenstorrent index), and
// for 4.x or an unknown version as its --help says. The version comes
// from the snapshot's host_sw_vers, else `tt-smi --version`, once.
func TestResetNamesTheBoardAsTTSMIReadsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version     string
		checkFirst  bool // the version is learnt from Check's snapshot
		want        string
		wantProbes  []string
		forbiddenV6 bool
	}{
		{version: "6.3.0", checkFirst: true, want: "tt-smi -r 0000:02:00.0", forbiddenV6: true},
		{version: "5.0.1", want: "tt-smi -r 0000:02:00.0", wantProbes: []string{"tt-smi --version"}, forbiddenV6: true},
		{version: "3.0.15", checkFirst: true, want: "tt-smi -r 2"},
		{version: "4.1.2", want: "tt-smi -r 2", wantProbes: []string{"tt-smi --version", "tt-smi --help"}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3}, harnesstest.WithTTSMIVersion(tc.version))
			cfg := ttConfig(t, h)
			dev := discoverByID(t, cfg)["tt2"]
			health := device.NewTTHealth(cfg)
			if tc.checkFirst {
				if err := health.Check(t.Context(), dev); err != nil {
					t.Fatalf("Check: %v", err)
				}
			}
			for range 2 { // the form is learnt once
				if err := health.Reset(t.Context(), dev); err != nil {
					t.Fatalf("Reset: %v", err)
				}
			}
			if got := resets(t, h); !slices.Equal(got, []string{tc.want, tc.want}) {
				t.Fatalf("tt-smi -r calls %q, want %q twice", got, tc.want)
			}
			for _, p := range tc.wantProbes {
				if n := countOf(h.Calls(t), p); n != 1 {
					t.Errorf("%q called %d times, want once: %q", p, n, h.Calls(t))
				}
			}
			if tc.forbiddenV6 {
				for _, c := range h.Calls(t) {
					if c == "tt-smi -r 1" || c == "tt-smi -r 2" {
						t.Fatalf("a bare node or logical id reached tt-smi %s: %q", tc.version, c)
					}
				}
			}
			// The board is back at its BDF: the re-check passes.
			if err := health.Check(t.Context(), dev); err != nil {
				t.Fatalf("Check after reset: %v", err)
			}
		})
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// A reset after which the board is back at another PCI address, or gone,
// fails the re-check by BDF with an error saying which.
func TestResetRecheckByBDF(t *testing.T) {
	t.Parallel()
	t.Run("moved", func(t *testing.T) {
		t.Parallel()
		h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3}, harnesstest.WithResetMoves(2))
		cfg := ttConfig(t, h)
		dev := discoverByID(t, cfg)["tt2"]
		health := device.NewTTHealth(cfg)
		if err := health.Reset(t.Context(), dev); err != nil {
			t.Fatal(err)
		}
		err := health.Check(t.Context(), dev)
		if err == nil || !strings.Contains(err.Error(), "PCI address 0000:02:00.0 is not in the tt-smi snapshot") ||
			!strings.Contains(err.Error(), "device node 2 is now 0000:42:00.0") || !strings.Contains(err.Error(), "reset can change") {
			t.Fatalf("Check after a reset that moved the board: %v", err)
		}
		// The other boards are untouched.
		if err := health.Check(t.Context(), discoverByID(t, cfg)["tt3"]); err != nil {
			t.Fatalf("Check(tt3): %v", err)
		}
	})
	t.Run("gone", func(t *testing.T) {
		t.Parallel()
		h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3}, harnesstest.WithResetKills(2))
		cfg := ttConfig(t, h)
		dev := discoverByID(t, cfg)["tt2"]
		health := device.NewTTHealth(cfg)
		if err := health.Reset(t.Context(), dev); err != nil {
			t.Fatal(err)
		}
		if err := health.Check(t.Context(), dev); err == nil || !strings.Contains(err.Error(), "device node") || !strings.Contains(err.Error(), "gone") {
			t.Fatalf("Check after a vanishing reset: %v", err)
		}
	})
	t.Run("renumbered", func(t *testing.T) {
		t.Parallel()
		h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3})
		cfg := ttConfig(t, h)
		dev := discoverByID(t, cfg)["tt2"]
		// The driver gives the board at 0000:02:00.0 node 5 (node 2 stays,
		// now another board's; sysfs says so).
		if err := os.Rename(filepath.Join(h.DevRoot, "3"), filepath.Join(h.DevRoot, "5")); err != nil {
			t.Fatal(err)
		}
		for _, l := range []struct{ node, bdf string }{{"5", "0000:02:00.0"}, {"2", "0000:03:00.0"}} {
			link := filepath.Join(h.Sys, "tenstorrent!"+l.node, "device")
			_ = os.MkdirAll(filepath.Dir(link), 0o755)
			_ = os.Remove(link)
			if err := os.Symlink(filepath.Join(h.Sys, "pci", l.bdf), link); err != nil {
				t.Fatal(err)
			}
		}
		err := device.NewTTHealth(cfg).Check(t.Context(), dev)
		if err == nil || !strings.Contains(err.Error(), "is now device node(s) 5 (was 2)") {
			t.Fatalf("Check of a renumbered board: %v", err)
		}
	})
}

// tt-smi's board types benchfleet did not know: a p100a is a p100 slot.
func TestDiscoverP100a(t *testing.T) {
	t.Parallel()
	h := harnesstest.NewTTHostNodes(t, []int{0}, harnesstest.WithBoard("p100a"))
	d := discoverByID(t, ttConfig(t, h))["tt0"]
	if d.Pool != "p100" || d.Arch != device.ArchBlackhole || d.Chips != 1 || !d.Healthy || d.Visible != "0000:01:00.0" {
		t.Fatalf("p100a: %+v", d)
	}
}

// A static slot's device nodes resolve to BDFs through sysfs, else a
// snapshot pairs them; a node neither names is an error naming it.
func TestResolveNodes(t *testing.T) {
	t.Parallel()
	h := harnesstest.NewTTHostNodes(t, []int{0, 2, 3})
	cfg := ttConfig(t, h)
	d, err := device.ResolveNodes(t.Context(), cfg, []int{2, 3})
	if err != nil || !slices.Equal(d.BDFs, []string{"0000:02:00.0", "0000:03:00.0"}) || d.Visible != "0000:02:00.0,0000:03:00.0" ||
		!slices.Equal(d.Nodes, []int{2, 3}) || d.Path != filepath.Join(h.DevRoot, "2") {
		t.Fatalf("ResolveNodes(2, 3) = %+v, %v", d, err)
	}
	if len(h.Calls(t)) != 0 {
		t.Errorf("sysfs answered, yet tt-smi ran: %q", h.Calls(t))
	}
	// Without sysfs links (a sysfs_root that has none), the snapshot pairs
	// the nodes with its chips in BDF order.
	cfg.SysRoot = t.TempDir()
	if d, err := device.ResolveNodes(t.Context(), cfg, []int{2}); err != nil || d.Visible != "0000:02:00.0" {
		t.Fatalf("ResolveNodes(2) by snapshot = %+v, %v", d, err)
	}
	_, err = device.ResolveNodes(t.Context(), cfg, []int{7})
	if err == nil || !strings.Contains(err.Error(), "device node 7") {
		t.Fatalf("ResolveNodes(7): %v, want an error naming node 7", err)
	}
	cfg.TTSMI = filepath.Join(t.TempDir(), "no-tt-smi")
	_, err = device.ResolveNodes(t.Context(), cfg, []int{2})
	if err == nil || !strings.Contains(err.Error(), "device node 2") || !strings.Contains(err.Error(), "tenstorrent!2") {
		t.Fatalf("ResolveNodes(2) without sysfs or tt-smi: %v", err)
	}
}

// hwmon is per PCI function: an n300's power from hwmon is its L chip's
// (PowerChips 1 of 2); the snapshot reports both chips (PowerChips 2).
func TestTTSamplerPowerChipsN300(t *testing.T) {
	t.Parallel()
	h := harnesstest.NewTTHostNodes(t, []int{0}, harnesstest.WithBoard("n300"))
	cfg := ttConfig(t, h)
	dev := discoverByID(t, cfg)["tt0"]
	if dev.Pool != "n300" || dev.Chips != 2 || !dev.Healthy {
		t.Fatalf("n300: %+v", dev)
	}
	s := device.NewTTSampler(cfg)
	got, err := s.Sample(t.Context(), dev)
	if err != nil || got.Source != "hwmon" || got.PowerW != 20 || got.PowerChips != 1 {
		t.Fatalf("hwmon sample %+v, %v", got, err)
	}
	tm := device.Summarize([]device.Sample{got}, got.Time.Add(-time.Second), got.Time.Add(time.Second))
	if tm == nil || tm.PowerChips != 1 || tm.PowerW.Mean != 20 {
		t.Fatalf("summary %+v", tm)
	}
	if err := os.RemoveAll(filepath.Dir(h.Hwmon(0))); err != nil {
		t.Fatal(err)
	}
	got, err = s.Sample(t.Context(), dev)
	if err != nil || got.Source != "tt-smi" || got.PowerW != 42 || got.PowerChips != 2 {
		t.Fatalf("snapshot sample %+v, %v", got, err)
	}
	// Samples that disagree: the summary claims the fewest chips.
	t0 := time.Now()
	tm = device.Summarize([]device.Sample{{Time: t0, PowerW: 42, PowerChips: 2}, {Time: t0, PowerW: 20, PowerChips: 1}}, t0, t0)
	if tm.PowerChips != 1 {
		t.Fatalf("mixed summary PowerChips %d", tm.PowerChips)
	}
}
