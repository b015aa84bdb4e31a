package boardhealth

import (
	"sync"
	"testing"
	"time"
)

// The writer stores the newest snapshot, in order, without making
// the caller wait: a burst handed in while a write is under way costs one
// more write, and Wait returns once a snapshot (or a newer one) is stored.
func TestWriterCoalescesAndWaits(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var stored []string
	gate := make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	h := NewWriter(func(b []byte) {
		once.Do(func() { close(first); <-gate }) // the first write hangs until released
		mu.Lock()
		stored = append(stored, string(b))
		mu.Unlock()
	})
	h.Store([]byte("1"))
	<-first // the write of "1" is under way
	var last uint64
	for _, s := range []string{"2", "3", "4"} {
		last = h.Store([]byte(s)) // returns at once: the writer is busy
	}
	done := make(chan struct{})
	go func() { h.Wait(last); close(done) }()
	select {
	case <-done:
		t.Fatal("wait returned before the snapshot was stored")
	case <-time.After(30 * time.Millisecond):
	}
	close(gate)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return after the writes")
	}
	mu.Lock()
	got := append([]string(nil), stored...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "1" || got[1] != "4" {
		t.Fatalf("stored %v, want [1 4] (the burst coalesced to its newest)", got)
	}
	h.Store([]byte("5"))
	h.Flush()
	mu.Lock()
	defer mu.Unlock()
	if stored[len(stored)-1] != "5" {
		t.Fatalf("after flush the newest stored is %q, want 5", stored[len(stored)-1])
	}
}
