package natsconn_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
)

// The defaults' arithmetic: a half-open connection is found (and the
// client reconnects) within StaleAfter of its last answered ping; a worker
// heartbeats every third of the ack wait, so with the default ack wait its
// claims are renewed on the new connection before they lapse.
func TestPingsFindAHalfOpenConnectionWithinAckWait(t *testing.T) {
	t.Parallel()
	stale := natsconn.StaleAfter(natsconn.DefaultPingInterval)
	if stale != 30*time.Second {
		t.Errorf("StaleAfter(default) = %s, want 30s", stale)
	}
	if heartbeat := topology.DefaultAckWait / 3; stale+heartbeat >= topology.DefaultAckWait {
		t.Errorf("found stale after %s, next heartbeat %s later: past the default ack wait %s", stale, heartbeat, topology.DefaultAckWait)
	}
}

// A connection through a proxy that stops forwarding (a half-open TCP
// connection: the client's writes go nowhere and nothing comes back) is
// found stale by the client's own pings, with the default ping interval,
// within StaleAfter; nats.go's default (2 minutes, so up to 6) let a
// worker's claims lapse meanwhile.
func TestHalfOpenConnectionIsFound(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	proxy := fleettest.StartProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	nc, err := natsconn.Connect(t.Context(), natsconn.Options{URL: "nats://" + proxy.Addr()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	proxy.Freeze()
	frozen := time.Now()
	limit := natsconn.StaleAfter(natsconn.DefaultPingInterval) + 5*time.Second
	fleettest.Eventually(t, limit, "the client to find its connection stale", func() bool {
		return nc.Status() != nats.CONNECTED
	})
	t.Logf("found stale %s after the connection went half-open (status %s)", time.Since(frozen).Round(100*time.Millisecond), nc.Status())
}
