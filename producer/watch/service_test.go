package watch_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// A pool is in service while one board of a live, not draining worker is
// not quarantined; otherwise each board of it is named with why it is out.
func TestPoolsService(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tt := func(id, state, reason string) protocol.DeviceStatus {
		return protocol.DeviceStatus{ID: id, Pool: "n150", Runner: "forge", State: state, Reason: reason}
	}
	for _, c := range []struct {
		name  string
		fleet []protocol.WorkerStatus
		want  string
	}{
		{"no worker", nil, "pool n150: no board in service: no live worker serves it"},
		{"one idle board", []protocol.WorkerStatus{{ID: "tt-host", Time: now, Devices: []protocol.DeviceStatus{
			tt("tt0", protocol.DeviceQuarantined, "reset failed"), tt("tt1", protocol.DeviceIdle, "")}}}, "pool n150: a board is in service again"},
		{"all out", []protocol.WorkerStatus{
			{ID: "tt-host", Time: now, Devices: []protocol.DeviceStatus{tt("tt1", protocol.DeviceQuarantined, ""), tt("tt0", protocol.DeviceQuarantined, "pcc 0.2 on the health check")}},
			{ID: "tt-drain", Time: now, Draining: true, Devices: []protocol.DeviceStatus{tt("tt0", protocol.DeviceIdle, "")}},
			{ID: "tt-gone", Time: now.Add(-time.Minute), Devices: []protocol.DeviceStatus{tt("tt0", protocol.DeviceIdle, "")}},
			{ID: "cpu-host", Time: now, Devices: []protocol.DeviceStatus{{ID: "cpu-0", Pool: "cpu", State: protocol.DeviceIdle}}},
		}, "pool n150: no board in service: tt-drain/tt0 out of service (worker draining), tt-gone/tt0 out of service (no heartbeat since 11:59:00Z), " +
			"tt-host/tt0 quarantined (pcc 0.2 on the health check), tt-host/tt1 quarantined"},
	} {
		got := watch.PoolsService(c.fleet, []string{"n150"}, now)
		if len(got) != 1 || got[0].String() != c.want {
			t.Errorf("%s: %v, want %q", c.name, got, c.want)
		}
	}
	if got := watch.RunPools([]protocol.ManifestJob{{Pool: "sim"}, {Pool: "n150"}, {Pool: "sim"}}); strings.Join(got, ",") != "n150,sim" {
		t.Errorf("RunPools: %v", got)
	}
}

// A ServiceWatch on a real bench-workers bucket says
// once that a pool's only board is quarantined (not again on the next
// heartbeat), again when the reason changes, and when the board is back;
// what was said already (by submit) is not repeated.
func TestServiceWatchSaysWhenAPoolHasNoBoard(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	beat := func(state, reason string) {
		t.Helper()
		st := protocol.WorkerStatus{Schema: protocol.SchemaWorker, ID: "tt-host", Host: "tt-host", Time: time.Now().UTC(),
			Devices: []protocol.DeviceStatus{{ID: "tt0", Pool: "n150", Runner: "forge", State: state, Reason: reason}}}
		data, _ := json.Marshal(st)
		if _, err := topo.Workers.Put(t.Context(), "tt-host", data); err != nil {
			t.Fatal(err)
		}
	}
	beat(protocol.DeviceQuarantined, "reset failed")

	var mu sync.Mutex
	var said []string
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw := &watch.ServiceWatch{Workers: topo.Workers, Pools: []string{"n150"}, Interval: 20 * time.Millisecond,
			OnChange: func(s watch.PoolService) {
				mu.Lock()
				said = append(said, s.String())
				mu.Unlock()
			}}
		sw.Check(ctx)
		sw.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitSaid := func(n int, want string) {
		t.Helper()
		fleettest.Eventually(t, 10*time.Second, want, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(said) >= n
		})
		mu.Lock()
		defer mu.Unlock()
		if said[n-1] != want {
			t.Fatalf("said %q, want %q (all: %q)", said[n-1], want, said)
		}
	}
	waitSaid(1, "pool n150: no board in service: tt-host/tt0 quarantined (reset failed)")
	// The next heartbeat, the same state, and the reason changed.
	beat(protocol.DeviceQuarantined, "reset failed")
	beat(protocol.DeviceQuarantined, "pcc 0.1 on the health check")
	waitSaid(2, "pool n150: no board in service: tt-host/tt0 quarantined (pcc 0.1 on the health check)")
	beat(protocol.DeviceIdle, "")
	waitSaid(3, "pool n150: a board is in service again")
	mu.Lock()
	if len(said) != 3 {
		t.Errorf("said %q, want 3 lines", said)
	}
	mu.Unlock()

	// What submit said already is not said again.
	beat(protocol.DeviceQuarantined, "reset failed")
	fleet, err := fleet.ReadFleet(t.Context(), topo.Workers)
	if err != nil {
		t.Fatal(err)
	}
	var again []string
	(&watch.ServiceWatch{Workers: topo.Workers, Pools: []string{"n150"},
		Said: watch.PoolsService(fleet, []string{"n150"}, time.Now()), OnChange: func(s watch.PoolService) { again = append(again, s.String()) }}).Check(t.Context())
	if len(again) != 0 {
		t.Errorf("said again what submit said: %q", again)
	}
}
