package fleet

import (
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

func TestFlagBoardsFarAboveTheirPool(t *testing.T) {
	t.Parallel()
	dev := func(id, pool string, jobs, infra, hangs int) protocol.DeviceStatus {
		return protocol.DeviceStatus{ID: id, Pool: pool, Health: &protocol.HealthCounts{WindowS: 86400, Jobs: jobs, Infra: infra, Hangs: hangs}}
	}
	sts := []protocol.WorkerStatus{
		{ID: "a", Devices: []protocol.DeviceStatus{dev("tt0", "n150", 20, 1, 5), dev("tt1", "n150", 20, 0, 1)}},
		{ID: "b", Devices: []protocol.DeviceStatus{dev("tt0", "n150", 20, 0, 0), dev("tt1", "n150", 10, 2, 0)}},
		{ID: "c", Devices: []protocol.DeviceStatus{dev("tt0", "p150", 4, 3, 0), dev("tt1", "n300", 40, 4, 4),
			{ID: "cpu-0", Pool: "cpu"}}},
	}
	FlagBoards(sts)
	flags := map[string]string{}
	for _, st := range sts {
		for _, d := range st.Devices {
			flags[st.ID+"/"+d.ID] = d.Flag
		}
	}
	// a/tt0: 6 of 20 (30%) vs 3 of 50 (6%) on the rest: flagged.
	if f := flags["a/tt0"]; !strings.Contains(f, "6 of 20 jobs failed") || !strings.Contains(f, "6% on the other n150 boards") {
		t.Errorf("a/tt0 flag %q", f)
	}
	// b/tt1: 2 failures only (below the minimum); a/tt1, b/tt0: fine.
	for _, k := range []string{"b/tt1", "a/tt1", "b/tt0", "c/cpu-0"} {
		if flags[k] != "" {
			t.Errorf("%s flagged: %q", k, flags[k])
		}
	}
	// The only p150 board, 3 of 4 failed: flagged without a comparison;
	// the only n300, 8 of 40 (20%) but under 50%: not.
	if f := flags["c/tt0"]; !strings.Contains(f, "no other p150 board") {
		t.Errorf("c/tt0 flag %q", f)
	}
	if flags["c/tt1"] != "" {
		t.Errorf("c/tt1 flagged: %q", flags["c/tt1"])
	}
}
