package device_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
)

// fakeHost is a stand-in Tenstorrent host: a device root with nodes, an
// optional sysfs class directory, and a tt-smi shell script that prints the
// current snapshot file for -s and, for -r, logs the request, removes the
// reset nodes (a reset that "succeeds" while the device vanishes) and
// exits 0.
type fakeHost struct {
	t        *testing.T
	dir      string
	devRoot  string
	sysRoot  string
	snapshot string // the file tt-smi -s prints
	resetLog string
	ttsmi    string
}

type hostOpts struct {
	legacy bool // tt-smi without --snapshot_no_tty
	prefix bool // progress text before the JSON
	hang   bool // tt-smi -s never finishes
}

func newFakeHost(t *testing.T, fixture string, nodes []int, o hostOpts) *fakeHost {
	t.Helper()
	dir := t.TempDir()
	h := &fakeHost{
		t: t, dir: dir,
		devRoot:  filepath.Join(dir, "dev", "tenstorrent"),
		sysRoot:  filepath.Join(dir, "sys", "class", "tenstorrent"),
		snapshot: filepath.Join(dir, "snapshot.json"),
		resetLog: filepath.Join(dir, "resets.log"),
		ttsmi:    filepath.Join(dir, "tt-smi"),
	}
	if err := os.MkdirAll(h.devRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := os.WriteFile(filepath.Join(h.devRoot, fmt.Sprint(n)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.setSnapshot(fixture)
	var legacy, prefix, hang string
	if o.legacy {
		legacy = `if [ "$2" = "--snapshot_no_tty" ]; then echo "usage: tt-smi [-h] [-s] [-r [RESET ...]]" >&2; echo "tt-smi: error: unrecognized arguments: --snapshot_no_tty" >&2; exit 2; fi`
	}
	if o.prefix {
		prefix = `echo "Detected Chips: 2"; echo "Gathering Information ━━━━━━━━━━━━ 100% 0:00:00"`
	}
	if o.hang {
		hang = `sleep 60`
	}
	script := fmt.Sprintf(`#!/bin/sh
# stand-in for tt-smi
case "$1" in
-s)
	%s
	%s
	%s
	cat '%s'
	;;
-r)
	echo "$2" >> '%s'
	for n in $(echo "$2" | tr ',' ' '); do rm -f '%s'/"$n"; done
	echo "Starting PCI link reset on devices at PCI indices: $2"
	echo "Finishing PCI link reset on devices at PCI indices: $2"
	exit 0
	;;
*)
	echo "tt-smi: error: unrecognized arguments: $*" >&2
	exit 2
	;;
esac
`, legacy, hang, prefix, h.snapshot, h.resetLog, h.devRoot)
	if err := os.WriteFile(h.ttsmi, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *fakeHost) setSnapshot(fixture string) {
	h.t.Helper()
	if err := os.WriteFile(h.snapshot, readFixture(h.t, fixture), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// link makes sysfs say device node n is the PCI device bdf.
func (h *fakeHost) link(n int, bdf string) {
	h.t.Helper()
	d := filepath.Join(h.sysRoot, fmt.Sprintf("tenstorrent!%d", n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:01.1/"+bdf, filepath.Join(d, "device")); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) config() device.DiscoverConfig {
	return device.DiscoverConfig{TTSMI: h.ttsmi, DevRoot: h.devRoot, SysRoot: h.sysRoot, Log: zerolog.New(zerolog.NewTestWriter(h.t))}
}

func TestDiscoverN300AndP150(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t, "n300_p150.json", []int{0, 1}, hostOpts{})
	devs, err := device.Discover(t.Context(), h.config())
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's tt-umd (0.1.1) predates BDFs in TT_VISIBLE_DEVICES:
	// Visible is the node numbers.
	want := []device.Device{
		{ID: "tt0", Pool: "n300", Runner: "forge", Arch: "wormhole", Chips: 2, Path: filepath.Join(h.devRoot, "0"),
			Nodes: []int{0}, BDFs: []string{"0000:03:00.0"}, Visible: "0", Firmware: "18.3.0", Healthy: true},
		{ID: "tt1", Pool: "p150", Runner: "forge", Arch: "blackhole", Chips: 1, Path: filepath.Join(h.devRoot, "1"),
			Nodes: []int{1}, BDFs: []string{"0000:04:00.0"}, Visible: "1", Firmware: "18.6.0", Healthy: true},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Fatalf("Discover:\n got %+v\nwant %+v", devs, want)
	}
}

func TestDiscoverMatchesBySysfs(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t, "n300_p150.json", []int{0, 1}, hostOpts{})
	// The driver numbered the p150 first.
	h.link(0, "0000:04:00.0")
	h.link(1, "0000:03:00.0")
	devs, err := device.Discover(t.Context(), h.config())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Pool != "p150" || devs[0].ID != "tt0" || devs[1].Pool != "n300" || devs[1].Visible != "1" || devs[1].Chips != 2 ||
		!slices.Equal(devs[0].BDFs, []string{"0000:04:00.0"}) || !slices.Equal(devs[1].BDFs, []string{"0000:03:00.0"}) {
		t.Fatalf("Discover: %+v", devs)
	}
}

func TestDiscoverVariants(t *testing.T) {
	t.Parallel()
	t.Run("p300 board with two nodes", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "p300.json", []int{0, 1}, hostOpts{})
		devs, err := device.Discover(t.Context(), h.config())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 1 || devs[0].ID != "tt0" || devs[0].Pool != "p300" || devs[0].Chips != 2 || !devs[0].Healthy ||
			!slices.Equal(devs[0].Nodes, []int{0, 1}) || len(devs[0].BDFs) != 2 || devs[0].Visible != "0,1" {
			t.Fatalf("Discover: %+v", devs)
		}
	})
	t.Run("two n150", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "n150x2.json", []int{0, 1}, hostOpts{})
		devs, err := device.Discover(t.Context(), h.config())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 2 || devs[1].ID != "tt1" || devs[1].Pool != "n150" || devs[1].Visible != "1" || !devs[1].Healthy {
			t.Fatalf("Discover: %+v", devs)
		}
	})
	t.Run("n300 without its remote chip", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "n300_missing_r.json", []int{0, 1}, hostOpts{})
		devs, err := device.Discover(t.Context(), h.config())
		if err != nil {
			t.Fatal(err)
		}
		if len(devs) != 2 || devs[0].Pool != "n300" || devs[0].Healthy || !devs[1].Healthy {
			t.Fatalf("Discover: %+v", devs)
		}
	})
	t.Run("old tt-smi, progress text, p100a, board without pool", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "legacy.json", []int{0, 1}, hostOpts{legacy: true, prefix: true})
		devs, err := device.Discover(t.Context(), h.config())
		if err != nil {
			t.Fatal(err)
		}
		// No host_sw_vers: tt-umd unknown, so Visible is the BDFs.
		if len(devs) != 2 || devs[0].ID != "tt0" || devs[0].Pool != "n150" || devs[0].Firmware != "1.7.0.0" || devs[0].Visible != "0000:07:00.0" ||
			devs[1].Pool != "p100" || devs[1].Arch != device.ArchBlackhole || devs[1].Chips != 1 || devs[1].Visible != "0000:08:00.0" {
			t.Fatalf("Discover: %+v", devs)
		}
		// A Grayskull board has no pool: skipped.
		if err := os.WriteFile(h.snapshot, []byte(strings.Replace(string(readFixture(t, "legacy.json")), `"p100a"`, `"e150"`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if devs, err = device.Discover(t.Context(), h.config()); err != nil || len(devs) != 1 || devs[0].Pool != "n150" {
			t.Fatalf("Discover with an e150: %+v, %v", devs, err)
		}
	})
	t.Run("no device root", func(t *testing.T) {
		t.Parallel()
		devs, err := device.Discover(t.Context(), device.DiscoverConfig{DevRoot: filepath.Join(t.TempDir(), "none"), TTSMI: "/nonexistent/tt-smi"})
		if err != nil || devs != nil {
			t.Fatalf("Discover = %v, %v; want nil, nil", devs, err)
		}
	})
	t.Run("nodes without tt-smi", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "n150x2.json", []int{0, 1}, hostOpts{})
		cfg := h.config()
		cfg.TTSMI = filepath.Join(t.TempDir(), "tt-smi")
		_, err := device.Discover(t.Context(), cfg)
		if err == nil || !strings.Contains(err.Error(), "tt-smi") || !strings.Contains(err.Error(), "2 device node(s)") {
			t.Fatalf("Discover error %v, want one naming tt-smi and the nodes", err)
		}
	})
	t.Run("more nodes than chips", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "n150x2.json", []int{0, 1, 2}, hostOpts{})
		_, err := device.Discover(t.Context(), h.config())
		if err == nil || !strings.Contains(err.Error(), "3 device node(s)") {
			t.Fatalf("Discover error %v", err)
		}
	})
	t.Run("garbage snapshot", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost(t, "n150x2.json", []int{0}, hostOpts{})
		if err := os.WriteFile(h.snapshot, []byte("No Tenstorrent devices detected!"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := device.Discover(t.Context(), h.config())
		if !errors.Is(err, device.ErrSnapshot) {
			t.Fatalf("Discover error %v, want ErrSnapshot", err)
		}
	})
}

func TestDiscoverTimeout(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t, "n150x2.json", []int{0, 1}, hostOpts{hang: true})
	cfg := h.config()
	cfg.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := device.Discover(t.Context(), cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Discover error %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Discover took %s with a 300ms timeout", d)
	}
}

func TestTTHealth(t *testing.T) {
	t.Parallel()
	h := newFakeHost(t, "n300_p150.json", []int{0, 1}, hostOpts{})
	cfg := h.config()
	devs, err := device.Discover(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n300, p150 := devs[0], devs[1]
	health := device.NewTTHealth(cfg)
	var _ device.Health = health
	for _, d := range devs {
		if err := health.Check(t.Context(), d); err != nil {
			t.Fatalf("Check(%s): %v", d.ID, err)
		}
	}

	// The n300 loses its Ethernet-attached chip.
	h.setSnapshot("n300_missing_r.json")
	if err := health.Check(t.Context(), n300); err == nil || !strings.Contains(err.Error(), "1 of the 2 chips") {
		t.Fatalf("Check without the remote chip: %v", err)
	}
	if err := health.Check(t.Context(), p150); err != nil {
		t.Fatalf("Check(p150): %v", err)
	}

	// tt-smi -r exits 0 but the node vanishes: Reset reports success and
	// the re-check catches it.
	if err := health.Reset(t.Context(), p150); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if log, _ := os.ReadFile(h.resetLog); strings.TrimSpace(string(log)) != "1" {
		t.Errorf("tt-smi -r got %q, want 1", log)
	}
	if err := health.Check(t.Context(), p150); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("Check after a vanishing reset: %v", err)
	}
}

// Not parallel: it rewrites an executable and then runs it, and a fork by
// a parallel test in between can hold the write descriptor into its child
// (exec then fails with "text file busy", golang.org/issue/22315); the
// sequential tests run before the parallel ones start.
func TestTTHealthResetTimeout(t *testing.T) {
	h := newFakeHost(t, "n150x2.json", []int{0}, hostOpts{})
	// A reset that never ends (of a tt-smi that tells its version).
	if err := os.WriteFile(h.ttsmi, []byte("#!/bin/sh\n[ \"$1\" = --version ] && { echo 6.3.0; exit 0; }\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.ResetTimeout = 300 * time.Millisecond
	err := device.NewTTHealth(cfg).Reset(t.Context(), device.Device{ID: "tt0", Nodes: []int{0}, BDFs: []string{"0000:01:00.0"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reset error %v, want DeadlineExceeded", err)
	}
}
