package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// The shipped worker user may do what a host fault needs (worker/
// hostfaults.go): read every heartbeat of bench-workers (which hosts
// serve a pool) and create, update and delete a job's host-fault record
// in bench-health. The reader may read that record but not write it.
func TestShippedWorkerKeepsHostFaultRecords(t *testing.T) {
	s := startSingle(t, "")
	connect := func(user string) jetstream.JetStream {
		nc, err := natsconn.Connect(t.Context(), natsconn.Options{URL: s.ClientURL(), User: user, Password: passwords[user],
			InboxPrefix: "_INBOX_" + user, ConnectTimeout: 10 * time.Second}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := topology.Apply(ctx, connect("admin"), topology.Config{}); err != nil {
		t.Fatalf("topology apply as admin: %v", err)
	}
	topo, err := topology.Ensure(ctx, connect("worker"), topology.Config{})
	if err != nil {
		t.Fatalf("topology as worker: %v", err)
	}
	if _, err := topo.Workers.Put(ctx, "host-a", []byte(`{"id":"host-a"}`)); err != nil {
		t.Fatalf("heartbeat as worker: %v", err)
	}
	w, err := topo.Workers.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		t.Fatalf("watch bench-workers as worker: %v", err)
	}
	seen := 0
	for e := range w.Updates() {
		if e == nil {
			break
		}
		seen++
	}
	_ = w.Stop()
	if seen != 1 {
		t.Fatalf("the worker read %d heartbeats, want 1", seen)
	}
	key := protocol.HostFaultsKey("j0123456789abcdef")
	rev, err := topo.Health.Create(ctx, key, []byte(`{"v":1}`))
	if err != nil {
		t.Fatalf("create %s as worker: %v", key, err)
	}
	if _, err := topo.Health.Update(ctx, key, []byte(`{"v":2}`), rev); err != nil {
		t.Fatalf("update %s as worker: %v", key, err)
	}
	reader, err := topology.Open(ctx, connect("reader"))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := reader.Health.Get(ctx, key); err != nil || string(e.Value()) != `{"v":2}` {
		t.Fatalf("read %s as reader: %v", key, err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := reader.Health.Put(pctx, key, []byte(`{"v":3}`)); err == nil {
		t.Fatalf("the reader wrote %s", key)
	}
	if err := topo.Health.Delete(ctx, key); err != nil {
		t.Fatalf("delete %s as worker: %v", key, err)
	}
	if _, err := topo.Health.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("%s after delete: %v", key, err)
	}
}
