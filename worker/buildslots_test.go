package worker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// A harness slot whose harness has no workdir (the upstream checkout) is
// a config error naming the slot and the key: forge's in forge: (or
// harnesses.forge), another harness's in harnesses.<name>; built-in slots
// need none and share one runner per kind.
func TestBuildSlotsNameTheMissingWorkdir(t *testing.T) {
	t.Parallel()
	host := harnesstest.NewTTHost(t, 2)
	disc := configfile.DiscoverySpec{TTSMI: host.TTSMI, DevRoot: host.DevRoot, SysRoot: host.Sys}
	for runner, key := range map[string]string{protocol.RunnerForge: "forge.workdir", protocol.RunnerTTXLA: "harnesses.tt-xla.workdir"} {
		wf := &configfile.File{Discovery: disc, Slots: []configfile.SlotSpec{{Pool: "n150", Runner: runner, Devices: []string{"1"}}}}
		_, err := worker.BuildSlots(t.Context(), wf, "", t.TempDir(), nil, zerolog.Nop())
		var ce *configfile.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "slot tt1 runs the "+runner+" harness: the config needs "+key+" (the upstream checkout)") {
			t.Errorf("%s without a workdir: %v, want a *configfile.Error naming %s", runner, err, key)
		}
	}
	slots, err := worker.BuildSlots(t.Context(), nil, "sim=2,cpu=1", t.TempDir(), nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 3 || slots[0].Runner != slots[1].Runner || slots[0].Runner.Name() != "sim" || slots[2].Runner.Name() != "cpu" {
		t.Fatalf("built-in slots %+v, want sim-0 and sim-1 sharing a runner, cpu-0", slots)
	}
}
