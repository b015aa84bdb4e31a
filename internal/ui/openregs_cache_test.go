package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// The home page's open regressions are made once per openTTL: within it
// a page gets the list made before (a step stored since is not in it);
// past it, the list made before while a new one is made, then the new one.
func TestOpenRegressionsKeptForTTL(t *testing.T) {
	fb, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := gate.GateConfig{}.WithDefaults()
	s := &Server{cfg: Config{Store: fb, Gate: cfg}}
	now := time.Now().UTC()
	put := func(model string, i int, v float64) {
		r := &protocol.Result{Schema: protocol.SchemaResult, Run: fmt.Sprintf("r%02d", i), Job: model + fmt.Sprint(i), RunCreatedAt: now.Add(time.Duration(i-20) * time.Hour),
			Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Benchmark: protocol.Benchmark{Model: model, BatchSize: 4, DataFormat: "bfloat16"},
			Source: protocol.Source{Commit: fmt.Sprintf("%040x", i+1), Branch: "main"}, Measurements: protocol.Measurements{SamplesPerSec: v}}
		if _, err := storage.PutResult(t.Context(), fb, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		put("a", i, 1000+float64(i%3))
	}
	put("a", 10, 700) // a step of one attempt is a step once the next run continues it
	put("a", 11, 701)
	first, pending, err := s.openRegressions(t.Context(), now)
	if err != nil || first == nil || pending || len(first.Open) != 1 {
		t.Fatalf("first list %+v, pending %v, %v: want one open regression", first, pending, err)
	}
	for i := range 10 {
		put("b", i, 500+float64(i%3))
	}
	put("b", 10, 300)
	put("b", 11, 301)
	if l, pending, _ := s.openRegressions(t.Context(), now.Add(openTTL/2)); l != first || pending {
		t.Errorf("within the TTL: list %p (pending %v), want the first %p", l, pending, first)
	}
	if l, pending, _ := s.openRegressions(t.Context(), now.Add(2*openTTL)); l != first || !pending {
		t.Errorf("past the TTL: list %p (pending %v), want the first while a new one is made", l, pending)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, _, err := s.openRegressions(t.Context(), now.Add(2*openTTL))
		if err == nil && l != first && len(l.Open) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new list with both open regressions: %+v, %v", l, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
