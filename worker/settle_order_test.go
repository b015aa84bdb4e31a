package worker

import (
	"testing"
	"time"
)

// A settle queued by settleLater waits for the slot's next claim: it runs
// only once the loop calls startSettles (right after its next fetch), and
// settled starts any still queued before it waits (a drain never strands
// one).
func TestSettleWaitsForTheNextClaim(t *testing.T) {
	t.Parallel()
	s := &slot{w: &Worker{}, settling: make(chan struct{}, settleWindow)}
	ran := make(chan int, 2)
	s.settleLater(func() { ran <- 1 })
	select {
	case <-ran:
		t.Fatal("the settle ran before the slot's next claim")
	case <-time.After(50 * time.Millisecond):
	}
	s.startSettles()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("startSettles did not run the queued settle")
	}
	s.settleLater(func() { ran <- 2 })
	s.settled() // starts it and waits
	select {
	case n := <-ran:
		if n != 2 {
			t.Fatalf("ran settle %d, want 2", n)
		}
	default:
		t.Fatal("settled returned without running the queued settle")
	}
}

// A delivery passed on to another slot of the worker is not counted done
// on the slot that passed it: the slot that runs it counts it (one job,
// counted once in DeviceStatus.Done).
func TestPassedOnDeliveryCountsNothingHere(t *testing.T) {
	t.Parallel()
	s := &slot{w: &Worker{statusKick: make(chan struct{}, 1)}, settling: make(chan struct{}, settleWindow)}
	hb := &claimKeeper{cancel: func() {}, done: make(chan struct{})}
	close(hb.done)
	s.settle(&attemptState{s: s, hb: hb}, outcome{act: actPassedOn})
	if got := s.completed; got != 0 { // status().Done
		t.Fatalf("Done %d after passing a delivery on, want 0", got)
	}
}
