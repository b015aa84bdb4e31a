package boardhealth_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/boardhealth"
)

func put(t *testing.T, topo *topology.Handles, key string, v any) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := topo.Health.Put(t.Context(), key, data); err != nil {
		t.Fatal(err)
	}
}

// A board's record is read as stored; a board without one, or with one
// that does not decode, starts with an empty history of its own.
func TestLoad(t *testing.T) {
	t.Parallel()
	_, js := fleettest.Connect(t, fleettest.Server(t).ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	put(t, topo, protocol.HealthKey("w1", "tt0"), protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "w1", Device: "tt0", Pool: "n150",
		Quarantined: true, Reason: "hung twice", Since: since})
	put(t, topo, protocol.HealthKey("w1", "tt2"), []byte("{not json"))

	h := boardhealth.Load(t.Context(), topo.Health, "w1", "tt0", "n150", zerolog.Nop())
	if !h.Quarantined || h.Reason != "hung twice" || !h.Since.Equal(since) {
		t.Errorf("stored record read as %+v", h)
	}
	for _, dev := range []string{"tt1", "tt2"} {
		h := boardhealth.Load(t.Context(), topo.Health, "w1", dev, "n150", zerolog.Nop())
		want := protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "w1", Device: dev, Pool: "n150"}
		if h.Quarantined || len(h.Events) != 0 || h.Schema != want.Schema || h.Worker != want.Worker || h.Device != want.Device || h.Pool != want.Pool {
			t.Errorf("%s: %+v, want an empty history %+v", dev, h, want)
		}
	}
}

// Only an operator's release of one of the worker's boards is reported:
// a record whose last event is a release, or one deleted; not the
// worker's own writes, nor another worker's boards. The watch ends with
// its ctx.
func TestWatchReleases(t *testing.T) {
	t.Parallel()
	_, js := fleettest.Connect(t, fleettest.Server(t).ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	released := make(chan string, 10)
	if err := boardhealth.WatchReleases(ctx, topo.Health, "w1", &wg, func(key string) { released <- key }); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		t.Helper()
		select {
		case k := <-released:
			return k
		case <-time.After(10 * time.Second):
			t.Fatal("no release reported")
			return ""
		}
	}
	own := protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "w1", Device: "tt0", Quarantined: true, Reason: "bad"}
	own.Record(protocol.HealthEvent{Time: time.Now(), Kind: protocol.HealthReset})
	put(t, topo, protocol.HealthKey("w1", "tt0"), own) // the worker's own write
	rel := protocol.DeviceHealth{Schema: protocol.SchemaHealth, Worker: "w1", Device: "tt0"}
	rel.Record(protocol.HealthEvent{Time: time.Now(), Kind: protocol.HealthRelease})
	put(t, topo, protocol.HealthKey("w2", "tt0"), rel) // another worker's board
	put(t, topo, protocol.HealthKey("w1", "tt0"), rel)
	if k := next(); k != "w1.tt0" {
		t.Fatalf("first release reported: %q, want w1.tt0", k)
	}
	put(t, topo, protocol.HealthKey("w1", "tt1"), own)
	if err := topo.Health.Delete(t.Context(), protocol.HealthKey("w1", "tt1")); err != nil {
		t.Fatal(err)
	}
	if k := next(); k != "w1.tt1" {
		t.Fatalf("deleted record reported as %q, want w1.tt1", k)
	}
	cancel()
	wg.Wait()
	select {
	case k := <-released:
		t.Errorf("%q reported, nothing more expected", k)
	default:
	}
}
