package harnesstest

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

//go:embed fake-tt-smi
var fakeTTSMI []byte

// TTHost is a fake Tenstorrent host: boards as files under DevRoot, a
// tt-kmd sysfs tree under Sys, and a tt-smi (fake-tt-smi, which says which
// upstream sources it follows) that lists the nodes still there.
type TTHost struct {
	DevRoot string
	// TTSMI is the fake tt-smi. Its calls are appended to CallLog.
	TTSMI   string
	CallLog string
	// Sys is a sysfs root in tt-kmd's layout: Sys/tenstorrent!N/device
	// links to the board's PCI device directory Sys/pci/<BDF>, which holds
	// hwmon/hwmon0/{power1_input (µW), temp1_input (m°C)}.
	Sys string
	// Nodes are the device node numbers the host was made with.
	Nodes []int
	// BDFs are their PCI addresses, by node.
	BDFs map[int]string
}

// Hwmon returns node n's hwmon directory.
func (h *TTHost) Hwmon(n int) string {
	return filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", n), "device", "hwmon", "hwmon0")
}

// TTHostOption configures NewTTHostNodes.
type TTHostOption func(*ttHostConfig)

type ttHostConfig struct {
	board, version, umd string
	kills, moves        []int
}

// WithBoard makes every board of the host a tt-smi board type: "n150"
// (the default), "n300" (an L chip over PCIe, with the node and the hwmon,
// and an R chip over Ethernet), "p100a" or "p150a".
func WithBoard(board string) TTHostOption { return func(c *ttHostConfig) { c.board = board } }

// WithTTSMIVersion makes the fake tt-smi that version (default 6.3.0):
// below 5 it reads `-r N` as /dev/tenstorrent/N (tt-smi 3.0.x), from 5 as
// a UMD logical id besides BDFs and /dev/tenstorrent/<N> paths.
func WithTTSMIVersion(v string) TTHostOption { return func(c *ttHostConfig) { c.version = v } }

// WithUMDVersion sets the tt_umd version a >= 5 tt-smi reports in its
// snapshot's host_sw_vers (default 0.9.5).
func WithUMDVersion(v string) TTHostOption { return func(c *ttHostConfig) { c.umd = v } }

// WithResetKills makes a reset of these nodes remove them (the reset
// leaves the board gone while tt-smi exits 0, as real tt-smi can).
func WithResetKills(nodes ...int) TTHostOption {
	return func(c *ttHostConfig) { c.kills = append(c.kills, nodes...) }
}

// WithResetMoves makes the boards of these nodes come back from a reset at
// another PCI address (bus + 0x40): BDFs are not stable across a reset.
func WithResetMoves(nodes ...int) TTHostOption {
	return func(c *ttHostConfig) { c.moves = append(c.moves, nodes...) }
}

// NewTTHost makes a host with nodes boards (0..nodes-1). A reset of a node
// listed in resetKills ("0", "1", ...) removes it.
func NewTTHost(t testing.TB, nodes int, resetKills ...string) *TTHost {
	t.Helper()
	ns := make([]int, nodes)
	for i := range ns {
		ns[i] = i
	}
	var kills []int
	for _, k := range resetKills {
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("harnesstest: reset kill %q is not a node number", k)
		}
		kills = append(kills, n)
	}
	return NewTTHostNodes(t, ns, WithResetKills(kills...))
}

// NewTTHostNodes makes a host whose device nodes are nodes (sparse ones,
// e.g. 0, 2, 3 with board 1 gone, included). PCI addresses are assigned
// in node order, 0000:01:00.0, 0000:02:00.0, ...: with nodes 0, 2, 3, node
// 2 is 0000:02:00.0, the second in BDF order (UMD logical id 1).
func NewTTHostNodes(t testing.TB, nodes []int, opts ...TTHostOption) *TTHost {
	t.Helper()
	cfg := ttHostConfig{board: "n150", version: "6.3.0", umd: "0.9.5"}
	for _, o := range opts {
		o(&cfg)
	}
	dir := t.TempDir()
	Traversable(t, dir)
	h := &TTHost{DevRoot: filepath.Join(dir, "dev"), CallLog: filepath.Join(dir, "tt-smi.calls"), Sys: filepath.Join(dir, "sys"),
		Nodes: append([]int(nil), nodes...), BDFs: map[int]string{}}
	if err := os.MkdirAll(h.DevRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		write(t, filepath.Join(h.DevRoot, strconv.Itoa(n)), "", 0o644)
		bdf := fmt.Sprintf("0000:%02x:00.0", i+1)
		h.BDFs[n] = bdf
		pci := filepath.Join(h.Sys, "pci", bdf)
		// The fake board's sensors move when its harness (run as the job
		// user, see device/box) writes them: the fake needs them writable.
		hw := filepath.Join(pci, "hwmon", "hwmon0")
		write(t, filepath.Join(hw, "power1_input"), "20000000\n", 0o666)
		write(t, filepath.Join(hw, "temp1_input"), "40000\n", 0o666)
		for _, p := range []string{hw, filepath.Join(hw, "power1_input"), filepath.Join(hw, "temp1_input")} {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", n))
		if err := os.MkdirAll(link, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(pci, filepath.Join(link, "device")); err != nil {
			t.Fatal(err)
		}
	}
	impl := filepath.Join(dir, "fake-tt-smi.sh")
	write(t, impl, string(fakeTTSMI), 0o755)
	h.TTSMI = filepath.Join(dir, "tt-smi")
	env := map[string]string{
		"FAKE_DEV_ROOT": h.DevRoot, "FAKE_SYS": h.Sys, "FAKE_CALL_LOG": h.CallLog, "FAKE_BOARD": cfg.board,
		"FAKE_TTSMI_VERSION": cfg.version, "FAKE_UMD_VERSION": cfg.umd,
		"FAKE_RESET_KILLS": joinInts(cfg.kills), "FAKE_RESET_MOVES": joinInts(cfg.moves),
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, k := range []string{"FAKE_DEV_ROOT", "FAKE_SYS", "FAKE_CALL_LOG", "FAKE_BOARD", "FAKE_TTSMI_VERSION", "FAKE_UMD_VERSION", "FAKE_RESET_KILLS", "FAKE_RESET_MOVES"} {
		fmt.Fprintf(&b, "%s=%q ", k, env[k])
	}
	fmt.Fprintf(&b, "exec %q \"$@\"\n", impl)
	write(t, h.TTSMI, b.String(), 0o755)
	return h
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Calls returns the tt-smi invocations so far, one "tt-smi ARGS" per call.
func (h *TTHost) Calls(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(h.CallLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}
