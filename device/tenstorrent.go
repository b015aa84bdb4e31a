package device

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// boardKinds maps tt-smi's board types (get_board_type in tt-smi's
// tt_smi/utils.py) to pools. A Blackhole Galaxy is a pool of its own: a job
// for a Galaxy runs on one architecture.
var boardKinds = map[string]BoardKind{
	"n150":         {Pool: "n150", Arch: ArchWormhole, Chips: 1},
	"n300":         {Pool: "n300", Arch: ArchWormhole, Chips: 2},
	"p100":         {Pool: "p100", Arch: ArchBlackhole, Chips: 1},
	"p100a":        {Pool: "p100", Arch: ArchBlackhole, Chips: 1},
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
	"tt-galaxy-bh": {Pool: "galaxy-bh", Arch: ArchBlackhole, Chips: 32, System: true},
}

// KindOf maps a tt-smi board type ("n150", "n300 L", "n300 R", "p100a",
// "p150a", "p300c", "wh_4u", "tt-galaxy-wh", "tt-galaxy-bh", ...) to its
// BoardKind. The " L"/" R" suffix tt-smi adds to Wormhole chips
// (local/remote) is ignored. ok is false for boards benchfleet has no pool
// for (Grayskull e75/e150/e300, nb_cb, bh-scrappy, "N/A").
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
// `tt-smi -s` snapshot still shows the board by its PCI addresses (BDFs),
// at the same device nodes, with all its chips (an n300 whose
// Ethernet-attached chip went missing fails; so does a board whose PCI
// address changed across a reset, since the slot's TT_VISIBLE_DEVICES
// names it by that address). Reset runs `tt-smi -r` naming the board as
// that tt-smi reads it (resetFormOf): by BDF for tt-smi >= 5, which reads a
// bare number as a UMD logical id, by device node number for older ones;
// the form is learnt once per TTHealth from the snapshot's host_sw_vers,
// else `tt-smi --version` (and `--help` for 4.x). tt-smi can exit 0
// although the reset failed, the board vanished or the id named no board,
// so a nil error from Reset means only that tt-smi ran: callers must Check
// again before using the device.
type TTHealth struct {
	cfg DiscoverConfig

	mu       sync.Mutex
	smiVer   string    // tt-smi's version as last reported, "" unknown
	smiReset resetForm // how that tt-smi's -r names a board
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
	found, problems, snap, err := discover(ctx, h.cfg)
	if err != nil {
		return fmt.Errorf("tenstorrent: %s: %w", dev.ID, err)
	}
	if snap != nil {
		h.noteVersion(snap.Software["tt_smi"])
	}
	return checkBoard(dev, nodes, found, problems)
}

// checkBoard finds dev in a fresh discovery: by its PCI addresses, each of
// which must belong to a discovered board, those boards together having
// exactly dev's addresses and nodes, all healthy, and (when dev is one
// board) of dev's pool. A device without addresses is looked up by ID.
func checkBoard(dev Device, nodes []int, found []Device, problems map[string]string) error {
	if len(dev.BDFs) == 0 {
		for _, d := range found {
			if d.ID != dev.ID {
				continue
			}
			if !slices.Equal(d.Nodes, nodes) || d.Pool != dev.Pool {
				return fmt.Errorf("tenstorrent: %s is now a %s at device nodes %s (was a %s at %s)", dev.ID, d.Pool, joinInts(d.Nodes), dev.Pool, joinInts(nodes))
			}
			if !d.Healthy {
				return fmt.Errorf("tenstorrent: %s: %s", dev.ID, problems[d.ID])
			}
			return nil
		}
		return fmt.Errorf("tenstorrent: %s (device nodes %s) is not in the tt-smi snapshot", dev.ID, joinInts(nodes))
	}
	var boards []Device
	for i, bdf := range dev.BDFs {
		j := slices.IndexFunc(found, func(d Device) bool { return slices.Contains(d.BDFs, bdf) })
		if j < 0 {
			return bdfGone(dev, bdf, nodeAt(nodes, i), found)
		}
		if !slices.ContainsFunc(boards, func(d Device) bool { return d.ID == found[j].ID }) {
			boards = append(boards, found[j])
		}
	}
	var gotNodes []int
	var gotBDFs []string
	for _, d := range boards {
		gotNodes = append(gotNodes, d.Nodes...)
		gotBDFs = append(gotBDFs, d.BDFs...)
	}
	slices.Sort(gotNodes)
	slices.Sort(gotBDFs)
	wantNodes, wantBDFs := slices.Sorted(slices.Values(nodes)), slices.Sorted(slices.Values(dev.BDFs))
	switch {
	case !slices.Equal(gotBDFs, wantBDFs):
		return fmt.Errorf("tenstorrent: %s: PCI address(es) %s now belong to board(s) with %s", dev.ID, strings.Join(wantBDFs, ","), strings.Join(gotBDFs, ","))
	case !slices.Equal(gotNodes, wantNodes):
		return fmt.Errorf("tenstorrent: %s (PCI %s) is now device node(s) %s (was %s): the device nodes were renumbered", dev.ID, strings.Join(dev.BDFs, ","), joinInts(gotNodes), joinInts(wantNodes))
	case len(boards) == 1 && boards[0].Pool != dev.Pool:
		return fmt.Errorf("tenstorrent: %s (PCI %s) is now a %s (was a %s)", dev.ID, strings.Join(dev.BDFs, ","), boards[0].Pool, dev.Pool)
	}
	for _, d := range boards {
		if !d.Healthy {
			return fmt.Errorf("tenstorrent: %s: %s", dev.ID, problems[d.ID])
		}
	}
	return nil
}

func nodeAt(nodes []int, i int) int {
	if i < len(nodes) {
		return nodes[i]
	}
	return -1
}

// bdfGone is the error of a device whose PCI address bdf (of device node
// node) no discovered board has.
func bdfGone(dev Device, bdf string, node int, found []Device) error {
	for _, d := range found {
		if i := slices.Index(d.Nodes, node); i >= 0 && i < len(d.BDFs) {
			return fmt.Errorf("tenstorrent: %s: PCI address %s is not in the tt-smi snapshot, and device node %d is now %s: "+
				"a reset can change a board's PCI address, so this slot's TT_VISIBLE_DEVICES (%s) no longer names its board",
				dev.ID, bdf, node, d.BDFs[i], dev.Visible)
		}
	}
	return fmt.Errorf("tenstorrent: %s: PCI address %s (device node %d) is not in the tt-smi snapshot", dev.ID, bdf, node)
}

// noteVersion records the tt-smi version a snapshot reported; a new one
// forgets the reset form learnt from the old.
func (h *TTHealth) noteVersion(v string) {
	if v == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if v != h.smiVer {
		h.smiVer, h.smiReset = v, resetFormUnknown
	}
}

// resetForm is how this host's tt-smi -r names a board: learnt from the
// version last seen (snapshot) or `tt-smi --version`, and from `tt-smi
// --help` when the version does not tell; then kept. It never guesses: a
// tt-smi that answers neither is an error, and no reset is tried.
func (h *TTHealth) resetForm(ctx context.Context, t ttSMI) (resetForm, error) {
	h.mu.Lock()
	ver, form := h.smiVer, h.smiReset
	h.mu.Unlock()
	if form != resetFormUnknown {
		return form, nil
	}
	if ver == "" {
		out, err := t.run(ctx, t.timeout, "--version")
		if err != nil {
			h.cfg.Log.Warn().Err(err).Msg("tenstorrent: tt-smi --version failed; reading its --help")
		}
		ver = strings.TrimSpace(string(out))
	}
	v, ok := parseVersion(ver)
	form = resetFormOf(v, ok)
	if form == resetFormUnknown {
		out, err := t.run(ctx, t.timeout, "--help")
		if err != nil {
			return resetFormUnknown, fmt.Errorf("tenstorrent: cannot tell how tt-smi (version %q) names a board to reset: %w", trunc(ver), err)
		}
		form = resetFormFromHelp(string(out))
	}
	h.cfg.Log.Info().Str("tt_smi", trunc(ver)).Stringer("reset_by", form).Msg("tenstorrent: tt-smi -r names boards by " + form.String())
	h.mu.Lock()
	if h.smiVer == "" || h.smiVer == ver {
		h.smiVer, h.smiReset = ver, form
	}
	h.mu.Unlock()
	return form, nil
}

// Reset implements Health: `tt-smi -r <board>` (the version lookup
// included) bounded by ResetTimeout, naming the board by PCI address or
// device node number as that tt-smi reads -r (see TTHealth). A nil error
// does not mean the device is back; see TTHealth.
func (h *TTHealth) Reset(ctx context.Context, dev Device) error {
	nodes, err := nodesOf(dev)
	if err != nil {
		return err
	}
	t, err := h.cfg.tool()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.ResetTimeout)
	defer cancel()
	form, err := h.resetForm(ctx, t)
	if err != nil {
		return fmt.Errorf("tenstorrent: reset %s: %w", dev.ID, err)
	}
	if err := t.reset(ctx, h.cfg.ResetTimeout, resetArgument(form, dev, nodes)); err != nil {
		return fmt.Errorf("tenstorrent: reset %s: %w", dev.ID, err)
	}
	return nil
}

// nodesOf returns the device node numbers of dev: its Nodes, or the number
// its Path ends in.
func nodesOf(dev Device) ([]int, error) {
	if len(dev.Nodes) > 0 {
		for _, n := range dev.Nodes {
			if n < 0 {
				return nil, fmt.Errorf("tenstorrent: %s: device node %d is not a device node number", dev.ID, n)
			}
		}
		return dev.Nodes, nil
	}
	n, err := strconv.Atoi(filepath.Base(dev.Path))
	if dev.Path == "" || err != nil || n < 0 {
		return nil, fmt.Errorf("tenstorrent: %s: no device node (nodes empty, path %q)", dev.ID, dev.Path)
	}
	return []int{n}, nil
}
