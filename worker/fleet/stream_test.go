package fleet_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// A read leaves no consumer behind: a stream takes at most 1,000 by
// default, and readers poll (waiters, the dashboard, tests).
func TestReadStoredLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	ctx := t.Context()
	if _, err := js.Publish(ctx, protocol.SubjectEventsPrefix+".r1.j1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for _, ephemeral := range []bool{false, true} {
		n := 0
		if _, err := fleet.ReadStoredFrom(ctx, js, protocol.StreamEvents, nil, 1, ephemeral, func(jetstream.Msg) { n++ }); err != nil || n != 1 {
			t.Fatalf("read (ephemeral %v): %d messages, %v; want 1", ephemeral, n, err)
		}
		s, err := js.Stream(context.Background(), protocol.StreamEvents)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers != 0 {
			t.Errorf("after a read (ephemeral %v): %d consumers on %s, want 0", ephemeral, info.State.Consumers, protocol.StreamEvents)
		}
	}
}
