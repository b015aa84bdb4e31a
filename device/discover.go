package device

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Defaults of DiscoverConfig.
const (
	DefaultTTSMI        = "tt-smi"
	DefaultDevRoot      = "/dev/tenstorrent"
	DefaultSysRoot      = "/sys/class/tenstorrent"
	defaultSnapTimeout  = 60 * time.Second
	defaultResetTimeout = 120 * time.Second
)

func (c DiscoverConfig) withDefaults() DiscoverConfig {
	if c.TTSMI == "" {
		c.TTSMI = DefaultTTSMI
	}
	if c.DevRoot == "" {
		c.DevRoot = DefaultDevRoot
	}
	if c.SysRoot == "" {
		c.SysRoot = DefaultSysRoot
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultSnapTimeout
	}
	if c.ResetTimeout <= 0 {
		c.ResetTimeout = defaultResetTimeout
	}
	return c
}

func (c DiscoverConfig) tool() (ttSMI, error) {
	path, err := exec.LookPath(c.TTSMI)
	if err != nil {
		return ttSMI{}, fmt.Errorf("tenstorrent: tt-smi (DiscoverConfig.TTSMI %q): %w", c.TTSMI, err)
	}
	return ttSMI{path: path, timeout: c.Timeout}, nil
}

// Discover finds the Tenstorrent boards of this host: the device nodes
// under DevRoot matched with a `tt-smi -s` snapshot. Each board is one
// Device named "tt<N>" after its lowest device node N, with Runner "forge",
// the pool, arch and chip count of its board type, the firmware bundle
// version, Nodes its device node numbers, BDFs their PCI addresses (from
// sysfs, else the snapshot's chip paired with the node), Path its first
// node and Visible the TT_VISIBLE_DEVICES value (VisibleDevices: the BDFs,
// which name the board whatever the node numbering; tt-umd >= 0.9.3 reads
// a bare number there as a position in the BDF-sorted device list, which
// names another board when the nodes are sparse).
//
// Chips are grouped into boards by board id: the two chips of an n300
// ("n300 L" over PCIe, "n300 R" over Ethernet) are one Device with Chips 2
// and the L chip's node and BDF (the remote chip has neither; the runtime
// reaches it through the local one); boards whose chips each have a node
// (p300) list them all. Galaxy chips form one host-wide device. A board with fewer
// chips in the snapshot than its type has is returned with Healthy false.
// Boards without a pool (Grayskull, unknown) are skipped with a warning on
// DiscoverConfig.Log.
//
// A host without device nodes (no DevRoot) has no boards: nil, nil. When
// there are nodes, a missing or failing tt-smi is an error naming it:
// without the snapshot the board types, and so the pools, are unknown.
func Discover(ctx context.Context, cfg DiscoverConfig) ([]Device, error) {
	devs, _, _, err := discover(ctx, cfg.withDefaults())
	return devs, err
}

// discover is Discover with the reasons devices are unhealthy, by ID, and
// the snapshot (nil when there are no device nodes).
func discover(ctx context.Context, cfg DiscoverConfig) ([]Device, map[string]string, *Snapshot, error) {
	nodes, err := deviceNodes(cfg.DevRoot)
	if err != nil || len(nodes) == 0 {
		return nil, nil, nil, err
	}
	snap, err := nodeSnapshot(ctx, cfg, len(nodes))
	if err != nil {
		return nil, nil, nil, err
	}
	devs, problems, err := assemble(cfg, nodes, snap)
	return devs, problems, snap, err
}

// nodeSnapshot takes the `tt-smi -s` snapshot of a host with n device
// nodes; errors say so.
func nodeSnapshot(ctx context.Context, cfg DiscoverConfig, n int) (*Snapshot, error) {
	t, err := cfg.tool()
	if err != nil {
		return nil, fmt.Errorf("tenstorrent: %d device node(s) under %s, but %w", n, cfg.DevRoot, err)
	}
	snap, err := t.snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("tenstorrent: %d device node(s) under %s, but no tt-smi snapshot: %w", n, cfg.DevRoot, err)
	}
	return snap, nil
}

// ResolveNodes names the board(s) of device nodes given by hand (a static
// slot of the worker config): it returns a Device with only Nodes, BDFs,
// Path and Visible set. Each node's PCI address is read from sysfs
// (SysRoot/tenstorrent!N/device); when sysfs lacks one, a `tt-smi -s`
// snapshot pairs the host's nodes with its PCIe chips as Discover does
// (and tells the tt-umd version VisibleDevices looks at). An error names
// the first node neither resolves. Visible is the BDFs when sysfs alone
// answered (tt-umd unknown).
func ResolveNodes(ctx context.Context, cfg DiscoverConfig, nodes []int) (Device, error) {
	cfg = cfg.withDefaults()
	if len(nodes) == 0 {
		return Device{}, errors.New("tenstorrent: no device node to resolve")
	}
	bdfs := make([]string, len(nodes))
	var missing []int
	for i, n := range nodes {
		if bdfs[i] = busID(cfg.SysRoot, n); bdfs[i] == "" {
			missing = append(missing, i)
		}
	}
	var software map[string]string
	if len(missing) > 0 {
		first := nodes[missing[0]]
		noLink := fmt.Sprintf("no sysfs link %s", filepath.Join(cfg.SysRoot, "tenstorrent!"+strconv.Itoa(first), "device"))
		all, err := deviceNodes(cfg.DevRoot)
		if err == nil && len(all) == 0 {
			err = fmt.Errorf("no device nodes under %s", cfg.DevRoot)
		}
		var snap *Snapshot
		if err == nil {
			snap, err = nodeSnapshot(ctx, cfg, len(all))
		}
		var byNode map[int]Chip
		if err == nil {
			byNode, err = pairNodes(cfg, all, snap)
		}
		if err != nil {
			return Device{}, fmt.Errorf("tenstorrent: device node %d has no known PCI address (%s, and no tt-smi snapshot to pair it with): %w", first, noLink, err)
		}
		for _, i := range missing {
			c, ok := byNode[nodes[i]]
			if !ok {
				return Device{}, fmt.Errorf("tenstorrent: device node %d has no known PCI address (%s, and %s holds no such node to pair with the tt-smi snapshot)",
					nodes[i], noLink, cfg.DevRoot)
			}
			bdfs[i] = c.BusID
		}
		software = snap.Software
	}
	return Device{
		Path:    filepath.Join(cfg.DevRoot, strconv.Itoa(nodes[0])),
		Nodes:   slices.Clone(nodes),
		BDFs:    bdfs,
		Visible: VisibleDevices(nodes, bdfs, software),
	}, nil
}

// deviceNodes lists the numbered device nodes under root, in order.
func deviceNodes(root string) ([]int, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tenstorrent: list device nodes: %w", err)
	}
	var nodes []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || strconv.Itoa(n) != e.Name() {
			continue
		}
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	return nodes, nil
}

// busID returns the PCI address of device node n from sysfs, "" if unknown.
func busID(sysRoot string, n int) string {
	for _, name := range []string{"tenstorrent!" + strconv.Itoa(n), strconv.Itoa(n)} {
		if target, err := os.Readlink(filepath.Join(sysRoot, name, "device")); err == nil {
			if b := strings.ToLower(filepath.Base(target)); bdfPattern.MatchString(b) {
				return b
			}
		}
	}
	return ""
}

// assemble matches device nodes with the snapshot's chips and groups the
// chips into boards.
func assemble(cfg DiscoverConfig, nodes []int, snap *Snapshot) ([]Device, map[string]string, error) {
	log := cfg.Log
	byNode, err := pairNodes(cfg, nodes, snap)
	if err != nil {
		return nil, nil, err
	}

	type board struct {
		kind  BoardKind
		nodes []int
		chips int
		first Chip
	}
	keyOf := func(c Chip, kind BoardKind, node int) string {
		switch {
		case kind.System:
			return "system:" + kind.Pool
		case c.BoardID != "":
			return "board:" + c.BoardID
		default:
			return "node:" + strconv.Itoa(node)
		}
	}
	boards := map[string]*board{}
	for _, n := range nodes {
		c, ok := byNode[n]
		if !ok {
			continue
		}
		kind, ok := KindOf(c.BoardType)
		if !ok {
			log.Warn().Int("node", n).Str("board_type", c.BoardType).Msg("tenstorrent: board type has no benchfleet pool; skipped")
			continue
		}
		k := keyOf(c, kind, n)
		b := boards[k]
		if b == nil {
			b = &board{kind: kind, first: c}
			boards[k] = b
		} else if b.kind != kind {
			log.Warn().Int("node", n).Str("board_id", c.BoardID).Str("board_type", c.BoardType).
				Msg("tenstorrent: chips of one board report different board types; node skipped")
			continue
		}
		b.nodes = append(b.nodes, n)
	}
	// Count every chip of each board, the Ethernet-attached ones included.
	for _, c := range snap.Chips {
		kind, ok := KindOf(c.BoardType)
		if !ok {
			continue
		}
		var k string
		switch {
		case kind.System:
			k = "system:" + kind.Pool
		case c.BoardID != "":
			k = "board:" + c.BoardID
		default:
			for n, nc := range byNode {
				if nc.Index == c.Index {
					k = "node:" + strconv.Itoa(n)
				}
			}
		}
		if b := boards[k]; b != nil && b.kind == kind {
			b.chips++
		}
	}

	var devs []Device
	problems := map[string]string{}
	for _, b := range boards {
		bdfs := make([]string, len(b.nodes))
		for i, n := range b.nodes {
			bdfs[i] = byNode[n].BusID
		}
		first := strconv.Itoa(b.nodes[0])
		d := Device{
			ID:       "tt" + first,
			Pool:     b.kind.Pool,
			Runner:   protocol.RunnerForge,
			Arch:     b.kind.Arch,
			Chips:    b.kind.Chips,
			Path:     filepath.Join(cfg.DevRoot, first),
			Nodes:    b.nodes,
			BDFs:     bdfs,
			Visible:  VisibleDevices(b.nodes, bdfs, snap.Software),
			Firmware: b.first.FirmwareVersion(),
			Healthy:  b.chips == b.kind.Chips,
		}
		if !d.Healthy {
			problems[d.ID] = fmt.Sprintf("%d of the %d chips of this %s (board %s) are in the tt-smi snapshot", b.chips, b.kind.Chips, b.kind.Pool, cmp.Or(b.first.BoardID, "unknown"))
			log.Warn().Str("device", d.ID).Str("pool", d.Pool).Msg("tenstorrent: " + problems[d.ID])
		}
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(a, b Device) int {
		an, _ := strconv.Atoi(strings.TrimPrefix(a.ID, "tt"))
		bn, _ := strconv.Atoi(strings.TrimPrefix(b.ID, "tt"))
		return cmp.Compare(an, bn)
	})
	return devs, problems, nil
}

// pairNodes maps device node numbers to the snapshot's PCIe chips: by PCI
// address from sysfs when it names every node, else in order (the driver
// numbers nodes in PCI address order).
func pairNodes(cfg DiscoverConfig, nodes []int, snap *Snapshot) (map[int]Chip, error) {
	log := cfg.Log
	var pcie []Chip
	for _, c := range snap.Chips {
		if !c.Remote() {
			pcie = append(pcie, c)
		}
	}
	byNode := map[int]Chip{}
	bus := map[string]Chip{}
	for _, c := range pcie {
		bus[c.BusID] = c
	}
	sysfs := true
	for _, n := range nodes {
		b := busID(cfg.SysRoot, n)
		if b == "" {
			sysfs = false
			break
		}
		if c, ok := bus[b]; ok {
			byNode[n] = c
		} else {
			log.Warn().Int("node", n).Str("bus_id", b).Msg("tenstorrent: device node not in the tt-smi snapshot; skipped")
		}
	}
	if !sysfs {
		clear(byNode)
		if len(nodes) != len(pcie) {
			return nil, fmt.Errorf("tenstorrent: %d device node(s) under %s but %d PCIe chip(s) in the tt-smi snapshot, and no sysfs links under %s to match them",
				len(nodes), cfg.DevRoot, len(pcie), cfg.SysRoot)
		}
		sorted := slices.Clone(pcie)
		slices.SortStableFunc(sorted, func(a, b Chip) int { return cmp.Compare(a.BusID, b.BusID) })
		for i, n := range nodes {
			byNode[n] = sorted[i]
		}
	}
	return byNode, nil
}
