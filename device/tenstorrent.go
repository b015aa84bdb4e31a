package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Tenstorrent architectures.
const (
	ArchWormhole  = "wormhole"
	ArchBlackhole = "blackhole"
)

// BoardKind is what a tt-smi board type means for benchfleet.
type BoardKind struct {
	// Pool is the board kind jobs ask for (protocol.Pools).
	Pool string
	// Arch is ArchWormhole or ArchBlackhole.
	Arch string
	// Chips is the number of chips one board (or system) of this kind has.
	Chips int
	// System is true for kinds whose chips form one host-wide system
	// (Galaxy) rather than one device per board.
	System bool
}

var boardKinds = map[string]BoardKind{
	"n150":         {Pool: "n150", Arch: ArchWormhole, Chips: 1},
	"n300":         {Pool: "n300", Arch: ArchWormhole, Chips: 2},
	"p150":         {Pool: "p150", Arch: ArchBlackhole, Chips: 1},
	"p150a":        {Pool: "p150", Arch: ArchBlackhole, Chips: 1},
	"p150b":        {Pool: "p150", Arch: ArchBlackhole, Chips: 1},
	"p150c":        {Pool: "p150", Arch: ArchBlackhole, Chips: 1},
	"p300":         {Pool: "p300", Arch: ArchBlackhole, Chips: 2},
	"p300a":        {Pool: "p300", Arch: ArchBlackhole, Chips: 2},
	"p300b":        {Pool: "p300", Arch: ArchBlackhole, Chips: 2},
	"p300c":        {Pool: "p300", Arch: ArchBlackhole, Chips: 2},
	"wh_4u":        {Pool: "galaxy", Arch: ArchWormhole, Chips: 32, System: true},
	"tt-galaxy-wh": {Pool: "galaxy", Arch: ArchWormhole, Chips: 32, System: true},
	"galaxy":       {Pool: "galaxy", Arch: ArchWormhole, Chips: 32, System: true},
}

// KindOf maps a tt-smi board type ("n150", "n300 L", "n300 R", "p150a",
// "p300c", "wh_4u", ...) to its BoardKind. The " L"/" R" suffix tt-smi adds
// to Wormhole chips (local/remote) is ignored. ok is false for boards
// benchfleet has no pool for (p100a, Grayskull e75/e150/e300, "N/A").
// llmbox/T3K systems are four n300 boards to tt-smi; serving them as one
// llmbox slot is a static slot in the worker config, not discovery.
func KindOf(boardType string) (kind BoardKind, ok bool) {
	t := strings.ToLower(strings.TrimSpace(boardType))
	t = strings.TrimSuffix(strings.TrimSuffix(t, " l"), " r")
	kind, ok = boardKinds[strings.TrimSpace(t)]
	return kind, ok
}

// DiscoverConfig says where Tenstorrent devices are found. The zero value
// uses the defaults.
type DiscoverConfig struct {
	// TTSMI is the tt-smi executable, a path or a name looked up in PATH.
	// Default "tt-smi".
	TTSMI string
	// DevRoot holds the device nodes, one per PCIe-attached chip:
	// DevRoot/0, DevRoot/1, ... Default /dev/tenstorrent.
	DevRoot string
	// SysRoot is the kernel driver's sysfs class directory, used to match
	// device node N to its PCI address (SysRoot/tenstorrent!N/device links
	// to the PCI device). Default /sys/class/tenstorrent. When it does not
	// resolve every node, nodes are paired with the snapshot's PCIe chips
	// in order (node number against PCI address), which is how the driver
	// numbers them.
	SysRoot string
	// Timeout bounds one `tt-smi -s`. Default 60s.
	Timeout time.Duration
	// ResetTimeout bounds one `tt-smi -r`. Default 120s.
	ResetTimeout time.Duration
	// Log receives discovery warnings (boards skipped, chips missing). The
	// zero Logger discards them.
	Log zerolog.Logger
}

// TTHealth is the Health of Tenstorrent devices.
//
// Check passes when every device node of the device exists and a fresh
// `tt-smi -s` snapshot still shows the board with all its chips (an n300
// whose Ethernet-attached chip went missing fails). Reset runs `tt-smi -r`
// on the device's nodes. tt-smi can exit 0 although the reset failed and
// the device node vanished, so a nil error from Reset means only that
// tt-smi ran: callers must Check again before using the device.
type TTHealth struct {
	cfg DiscoverConfig
}

// NewTTHealth returns the Health of devices found with cfg.
func NewTTHealth(cfg DiscoverConfig) *TTHealth {
	return &TTHealth{cfg: cfg.withDefaults()}
}

// Check implements Health.
func (h *TTHealth) Check(ctx context.Context, dev Device) error {
	nodes, err := nodesOf(dev)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		p := filepath.Join(h.cfg.DevRoot, strconv.Itoa(n))
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("tenstorrent: %s: device node %s is gone", dev.ID, p)
			}
			return fmt.Errorf("tenstorrent: %s: %w", dev.ID, err)
		}
	}
	found, problems, err := discover(ctx, h.cfg)
	if err != nil {
		return fmt.Errorf("tenstorrent: %s: %w", dev.ID, err)
	}
	for _, d := range found {
		if d.ID != dev.ID {
			continue
		}
		if d.Visible != dev.Visible || d.Pool != dev.Pool {
			return fmt.Errorf("tenstorrent: %s is now a %s with chips %q (was a %s with %q)", dev.ID, d.Pool, d.Visible, dev.Pool, dev.Visible)
		}
		if !d.Healthy {
			return fmt.Errorf("tenstorrent: %s: %s", dev.ID, problems[d.ID])
		}
		return nil
	}
	return fmt.Errorf("tenstorrent: %s (nodes %s) is not in the tt-smi snapshot", dev.ID, dev.Visible)
}

// Reset implements Health: `tt-smi -r <nodes>` bounded by ResetTimeout. A
// nil error does not mean the device is back; see TTHealth.
func (h *TTHealth) Reset(ctx context.Context, dev Device) error {
	nodes, err := nodesOf(dev)
	if err != nil {
		return err
	}
	t, err := h.cfg.tool()
	if err != nil {
		return err
	}
	if err := t.reset(ctx, h.cfg.ResetTimeout, nodes); err != nil {
		return fmt.Errorf("tenstorrent: reset %s: %w", dev.ID, err)
	}
	return nil
}

// nodesOf returns the device node numbers of dev: its Visible list, or the
// number its Path ends in.
func nodesOf(dev Device) ([]int, error) {
	src := dev.Visible
	if src == "" {
		src = filepath.Base(dev.Path)
	}
	var nodes []int
	for _, f := range strings.Split(src, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("tenstorrent: %s: %q names no device node", dev.ID, src)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
