package worker_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// Device nodes 0, 2 and 3 (board 1 gone): the board of node 2 is the
// second in PCI address order, so tt-umd >= 0.9.3 reads
// TT_VISIBLE_DEVICES=2 as node 3's board, and tt-smi >= 5 reads `-r 2` as
// node 3's (and `-r 1` as node 2's). A static slot `devices: ["2"]` gets
// TT_VISIBLE_DEVICES=<its BDF>, and when its harness hangs the reset is
// `tt-smi -r <its BDF>`: never a bare 1 or 2.
func TestSparseNodesSlotNamesItsBoardByBDF(t *testing.T) {
	t.Parallel()
	host := harnesstest.NewTTHostNodes(t, []int{0, 2, 3})
	bdf2 := host.BDFs[2]
	dump := harnesstest.DumpPath(t)
	c := harnesstest.NewCheckout(t, protocol.RunnerForge, "", false)
	wf := &configfile.File{
		Slots:     []configfile.SlotSpec{{Pool: "n150", Runner: protocol.RunnerForge, Devices: []string{"2"}}},
		Discovery: configfile.DiscoverySpec{TTSMI: host.TTSMI, DevRoot: host.DevRoot, SysRoot: host.Sys},
		Forge: &configfile.HarnessSpec{Workdir: c.Workdir, Python: c.Python, Env: map[string]string{
			"FAKE_ENV_DUMP": dump, "FAKE_HANG_DEVICES": bdf2, "FAKE_WATCHDOG_SCALE": "0.001"}},
		Isolation: configfile.IsolationSpec{Writable: []string{filepath.Dir(dump)}},
	}
	slots, err := worker.BuildSlots(t.Context(), wf, "", t.TempDir(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// Registered after TempDir's: runs first, removing the warm rooms.
	t.Cleanup(func() {
		if err := worker.CloseSlots(slots); err != nil {
			t.Error(err)
		}
	})
	if len(slots) != 1 || slots[0].Device.ID != "tt2" || slots[0].Device.Visible != bdf2 || !slices.Equal(slots[0].Device.Nodes, []int{2}) {
		t.Fatalf("slots %+v, want tt2 with Visible %s", slots, bdf2)
	}

	f := newTTFleet(t)
	f.start(t, "tt-sparse", slots)
	const run = "sparse-hang"
	j := harnessJob(t, run, protocol.RunnerForge, harnesstest.ForgeResNet50, 1, 4, nil)
	j.Limits.Timeout = protocol.Duration(2 * time.Minute) // the scaled watchdog ends the hang first
	fleettest.Submit(t, f.js, f.topo, f.store, run, protocol.PriorityNormal, []*protocol.Job{j})
	fleettest.Eventually(t, 2*time.Minute, "the hung board reset", func() bool {
		return slices.Contains(host.Calls(t), "tt-smi -r "+bdf2)
	})
	if got := harnesstest.ReadDump(t, dump).Env["TT_VISIBLE_DEVICES"]; got != bdf2 {
		t.Fatalf("the harness got TT_VISIBLE_DEVICES=%q, want %s", got, bdf2)
	}
	for _, call := range host.Calls(t) {
		if strings.HasPrefix(call, "tt-smi -r") && call != "tt-smi -r "+bdf2 {
			t.Fatalf("tt-smi calls %q: a reset named another target than %s", host.Calls(t), bdf2)
		}
	}
}
