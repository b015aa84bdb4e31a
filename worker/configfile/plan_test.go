package configfile_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	_ "github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// Discovered slots name their boards by BDF too; a static slot whose node
// names no board (node 1 is gone) is an error naming the key and the node.
func TestPlanSlotsSparseNodes(t *testing.T) {
	t.Parallel()
	host := harnesstest.NewTTHostNodes(t, []int{0, 2, 3})
	disc := configfile.DiscoverySpec{Enabled: true, TTSMI: host.TTSMI, DevRoot: host.DevRoot, SysRoot: host.Sys}
	planned, err := configfile.PlanSlots(t.Context(), &configfile.File{Discovery: disc}, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range planned {
		got[p.Device.ID] = p.Device.Visible
	}
	if len(got) != 3 || got["tt0"] != host.BDFs[0] || got["tt2"] != host.BDFs[2] || got["tt3"] != host.BDFs[3] {
		t.Fatalf("discovered slots' TT_VISIBLE_DEVICES %v, want their BDFs %v", got, host.BDFs)
	}

	disc.Enabled = false
	wf := &configfile.File{Discovery: disc, Slots: []configfile.SlotSpec{{Pool: "n150", Runner: protocol.RunnerForge, Devices: []string{"1"}}}}
	_, err = configfile.PlanSlots(t.Context(), wf, "", zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "config slots[0].devices") || !strings.Contains(err.Error(), "device node 1") {
		t.Fatalf("a static slot on a missing node: %v", err)
	}
}
