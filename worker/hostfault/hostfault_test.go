package hostfault_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/hostfault"
)

func handles(t *testing.T) *topology.Handles {
	t.Helper()
	_, js := fleettest.Connect(t, fleettest.Server(t).ClientURL())
	return fleettest.Topology(t, js, topology.Config{})
}

// Workers that record their faults on one job at once lose none of them
// (compare-and-set, retried); an unreadable record is started again; a
// deleted one is gone.
func TestRecordUpdatedByConcurrentWorkers(t *testing.T) {
	t.Parallel()
	topo := handles(t)
	job := &protocol.Job{ID: "j1", Run: "r1", Pool: "n150", Runner: protocol.RunnerForge}
	if _, err := topo.Health.Put(t.Context(), protocol.HostFaultsKey(job.ID), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if rec, rev, err := hostfault.Get(t.Context(), topo.Health, job.ID); rec != nil || rev == 0 || err != nil {
		t.Fatalf("unreadable record: %+v rev %d %v, want none with its revision", rec, rev, err)
	}
	const hosts = 6
	var wg sync.WaitGroup
	errs := make(chan error, hosts)
	for i := range hosts {
		wg.Go(func() {
			_, err := hostfault.Update(t.Context(), topo.Health, job, func(r *protocol.JobHostFaults) {
				r.Hosts[fmt.Sprintf("w%d", i)] = protocol.HostFault{Reason: "ImportError", Confirmed: i == 0}
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, _, err := hostfault.Get(t.Context(), topo.Health, job.ID)
	if err != nil || rec == nil {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if len(rec.Hosts) != hosts || rec.Job != "j1" || rec.Run != "r1" || rec.Pool != "n150" || rec.Runner != protocol.RunnerForge || rec.Schema != protocol.SchemaHostFaults {
		t.Fatalf("record after %d concurrent writers: %+v", hosts, rec)
	}
	if n := len(rec.Unconfirmed()); n != hosts-1 {
		t.Errorf("%d unconfirmed hosts, want %d", n, hosts-1)
	}
	if err := hostfault.Delete(t.Context(), topo.Health, job.ID); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := hostfault.Get(t.Context(), topo.Health, job.ID); rec != nil || err != nil {
		t.Fatalf("deleted record read as %+v, %v", rec, err)
	}
}

// The hosts serving a pool with a runner: this one when it says so, and
// every other worker whose heartbeat lists such a device in service and
// that is not draining.
func TestServingHosts(t *testing.T) {
	t.Parallel()
	topo := handles(t)
	beat := func(id string, draining bool, devs ...protocol.DeviceStatus) {
		data, err := json.Marshal(protocol.WorkerStatus{Schema: protocol.SchemaWorker, ID: id, Draining: draining, Devices: devs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topo.Workers.Put(t.Context(), id, data); err != nil {
			t.Fatal(err)
		}
	}
	forge := func(pool, state string) protocol.DeviceStatus {
		return protocol.DeviceStatus{ID: "tt0", Pool: pool, Runner: protocol.RunnerForge, State: state}
	}
	beat("w1", false, forge("n150", protocol.DeviceQuarantined)) // itself: its own word counts
	beat("w2", false, forge("n150", protocol.DeviceBusy))
	beat("w3", true, forge("n150", protocol.DeviceIdle))
	beat("w4", false, forge("n150", protocol.DeviceQuarantined), forge("n300", protocol.DeviceIdle))
	beat("w5", false, protocol.DeviceStatus{ID: "tt0", Pool: "n150", Runner: "tt-xla", State: protocol.DeviceIdle})
	for _, self := range []bool{true, false} {
		got, err := hostfault.ServingHosts(t.Context(), topo.Workers, "w1", self, "n150", protocol.RunnerForge)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1+btoi(self) || !got["w2"] || got["w1"] != self {
			t.Errorf("self serving %v: %v, want w2 (and w1 when it serves)", self, got)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A job fails on every host when two hosts said so unconfirmed, or every
// host serving its pool did; the serving hosts are read only when one
// host's word is all there is.
func TestEveryHost(t *testing.T) {
	t.Parallel()
	rec := func(hosts map[string]bool) *protocol.JobHostFaults {
		r := &protocol.JobHostFaults{Hosts: map[string]protocol.HostFault{}}
		for id, confirmed := range hosts {
			r.Hosts[id] = protocol.HostFault{Confirmed: confirmed}
		}
		return r
	}
	down := errors.New("bench-workers not answering")
	for _, c := range []struct {
		name    string
		rec     *protocol.JobHostFaults
		serving map[string]bool
		err     error
		want    string // a part of the reason; "" for none
		asked   bool
	}{
		{name: "two unconfirmed", rec: rec(map[string]bool{"w1": false, "w2": false}), want: "2 hosts (w1, w2) said they cannot run the harness (last: boom)"},
		{name: "only confirmed", rec: rec(map[string]bool{"w1": true, "w2": true})},
		{name: "every serving host", rec: rec(map[string]bool{"w1": false, "w2": true}), serving: map[string]bool{"w2": true, "w1": true}, asked: true,
			want: "every host serving pool n150 with forge (w1, w2) said it cannot run the harness (last: boom)"},
		{name: "a serving host left", rec: rec(map[string]bool{"w1": false}), serving: map[string]bool{"w1": true, "w3": true}, asked: true},
		{name: "no serving host", rec: rec(map[string]bool{"w1": false}), serving: map[string]bool{}, asked: true},
		{name: "serving unknown", rec: rec(map[string]bool{"w1": false}), err: down, asked: true},
	} {
		asked := false
		got, err := hostfault.EveryHost(t.Context(), c.rec, "n150", protocol.RunnerForge, "boom", func(context.Context) (map[string]bool, error) {
			asked = true
			return c.serving, c.err
		})
		switch {
		case !errors.Is(err, c.err):
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		case c.want == "" && got != "", c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: reason %q, want %q", c.name, got, c.want)
		case asked != c.asked:
			t.Errorf("%s: serving hosts read: %v, want %v", c.name, asked, c.asked)
		}
	}
}

// A host hands a job it faulted on back after 1s, doubling per pass up to
// 16s; a streak counts different jobs, and a job run to its end ends it.
func TestPassDelayAndStreaks(t *testing.T) {
	t.Parallel()
	for passes, want := range map[int]time.Duration{-1: time.Second, 0: time.Second, 1: 2 * time.Second, 4: 16 * time.Second, 30: 16 * time.Second} {
		if got := hostfault.PassDelay(passes); got != want {
			t.Errorf("PassDelay(%d) = %s, want %s", passes, got, want)
		}
	}
	s := hostfault.NewStreaks()
	s.Fault("forge", "j1")
	s.Fault("forge", "j1")
	s.Fault("tt-xla", "j9")
	if n := s.Fault("forge", "j2"); n != 2 {
		t.Errorf("streak %d after jobs j1, j1, j2, want 2", n)
	}
	s.Ran("forge")
	if n := s.Fault("forge", "j3"); n != 1 {
		t.Errorf("streak %d after a job ran, want 1", n)
	}
	if n := s.Fault("tt-xla", "j8"); n != 2 {
		t.Errorf("another runner's streak %d, want 2", n)
	}
}
