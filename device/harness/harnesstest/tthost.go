package harnesstest

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed fake-tt-smi
var fakeTTSMI []byte

// TTHost is a fake Tenstorrent host: n150 boards as files under DevRoot and
// a tt-smi that lists the nodes still there.
type TTHost struct {
	DevRoot string
	// TTSMI is the fake tt-smi. Its calls are appended to CallLog.
	TTSMI   string
	CallLog string
	// Sys is a sysfs root in tt-kmd's layout: Sys/tenstorrent!N/device
	// links to the board's PCI device directory, which holds
	// hwmon/hwmon0/{power1_input (µW), temp1_input (m°C)}.
	Sys string
}

// Hwmon returns node n's hwmon directory.
func (h *TTHost) Hwmon(n int) string {
	return filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", n), "device", "hwmon", "hwmon0")
}

// NewTTHost makes a host with nodes boards (0..nodes-1). A reset of a node
// listed in resetKills removes it (the reset leaves the board gone while
// tt-smi exits 0, as real tt-smi can).
func NewTTHost(t testing.TB, nodes int, resetKills ...string) *TTHost {
	t.Helper()
	dir := t.TempDir()
	h := &TTHost{DevRoot: filepath.Join(dir, "dev"), CallLog: filepath.Join(dir, "tt-smi.calls"), Sys: filepath.Join(dir, "sys")}
	if err := os.MkdirAll(h.DevRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		write(t, filepath.Join(h.DevRoot, fmt.Sprint(i)), "", 0o644)
		// The fake tt-smi puts node i at bus 0000:0<i+1>:00.0.
		pci := filepath.Join(h.Sys, "pci", fmt.Sprintf("0000:0%d:00.0", i+1))
		write(t, filepath.Join(pci, "hwmon", "hwmon0", "power1_input"), "20000000\n", 0o644)
		write(t, filepath.Join(pci, "hwmon", "hwmon0", "temp1_input"), "40000\n", 0o644)
		link := filepath.Join(h.Sys, fmt.Sprintf("tenstorrent!%d", i))
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
	write(t, h.TTSMI, fmt.Sprintf("#!/bin/sh\nFAKE_DEV_ROOT=%q FAKE_CALL_LOG=%q FAKE_RESET_KILLS=%q exec %q \"$@\"\n",
		h.DevRoot, h.CallLog, strings.Join(resetKills, ","), impl), 0o755)
	return h
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
