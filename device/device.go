package device

import "context"

// Device is one slot a worker serves: a Tenstorrent board or a built-in
// cpu/sim slot.
type Device struct {
	// ID is unique within a host, e.g. "tt0", "cpu-1".
	ID string `json:"id"`
	// Pool is the board kind jobs ask for (n150, ..., cpu, sim).
	Pool string `json:"pool"`
	// Runner is the runner this slot uses (forge, cpu, sim).
	Runner string `json:"runner"`
	// Arch is wormhole or blackhole for Tenstorrent boards, else empty.
	Arch string `json:"arch,omitempty"`
	// Chips is the number of chips of the board (1 for built-in slots).
	Chips int `json:"chips"`
	// Path is the first device node, e.g. /dev/tenstorrent/0 ("" for
	// built-in).
	Path string `json:"path,omitempty"`
	// Nodes are the device node numbers (/dev/tenstorrent/<N>) of the
	// board's PCIe-attached chips, lowest first; nil for built-in slots. An
	// Ethernet-attached chip (n300 R) has none.
	Nodes []int `json:"nodes,omitempty"`
	// BDFs are the PCI addresses (0000:01:00.0) of those chips, in Nodes
	// order; nil for built-in slots. They name a board whatever the device
	// node numbering, but can change across a reset.
	BDFs []string `json:"bdfs,omitempty"`
	// Visible is the TT_VISIBLE_DEVICES value for this slot: the
	// comma-joined BDFs, or the comma-joined node numbers when the host's
	// tt-umd is known to predate PCI addresses there (< 0.9.2, see
	// VisibleDevices); "" for built-in slots.
	Visible string `json:"-"`
	// Firmware is the firmware version when known.
	Firmware string `json:"firmware,omitempty"`
	// Healthy is the last health check's verdict.
	Healthy bool `json:"healthy"`
}

// Health checks and resets devices between jobs. Built-in slots use
// AlwaysHealthy.
type Health interface {
	// Check reports nil when dev can take a job.
	Check(ctx context.Context, dev Device) error
	// Reset tries to bring dev back after an infrastructure failure. A nil
	// error does not mean the device is good: callers Check again.
	Reset(ctx context.Context, dev Device) error
}

// AlwaysHealthy is the Health of built-in slots: nothing to check or reset.
type AlwaysHealthy struct{}

// Check implements Health.
func (AlwaysHealthy) Check(context.Context, Device) error { return nil }

// Reset implements Health.
func (AlwaysHealthy) Reset(context.Context, Device) error { return nil }
