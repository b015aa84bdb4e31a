package ui

import (
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
)

// A bench-runs entry read through the cache is reused until its TTL ends
// (a write behind the cache's back is seen only then); a write through
// the cache is seen at once; a missing key is cached as missing.
func TestKVCacheReusesUntilTTL(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	kv := fleettest.Topology(t, js, topology.Config{AckWait: 10 * time.Second}).Runs
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := newKVCache(kv, 2*time.Second, clock)
	ctx := t.Context()
	if _, err := kv.PutString(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	value := func() string {
		t.Helper()
		e, err := c.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Value())
	}
	if v := value(); v != "v1" {
		t.Fatalf("first read %q", v)
	}
	if _, err := kv.PutString(ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	if v := value(); v != "v1" {
		t.Errorf("read within the TTL: %q, want the cached v1", v)
	}
	advance(2 * time.Second)
	if v := value(); v != "v2" {
		t.Errorf("read after the TTL: %q, want v2", v)
	}
	if _, err := c.PutString(ctx, "k", "v3"); err != nil {
		t.Fatal(err)
	}
	if v := value(); v != "v3" {
		t.Errorf("read after a write through the cache: %q, want v3", v)
	}
	if _, err := c.Get(ctx, "absent"); err == nil {
		t.Fatal("absent key found")
	}
	if _, err := kv.PutString(ctx, "absent", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "absent"); err == nil {
		t.Error("a missing key was read again within the TTL")
	}
}
