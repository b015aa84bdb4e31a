package worker

import (
	"testing"
	"time"
)

func TestEmptyHint(t *testing.T) {
	h := newEmptyHint(3)
	t0 := time.Now().Add(time.Hour) // well after any publish below
	if h.skip(0, t0) {
		t.Fatal("skips a priority never fetched")
	}
	seen := h.seen(0)
	h.foundEmpty(0, seen, t0)
	if !h.skip(0, t0.Add(emptyHintTTL/2)) {
		t.Fatal("does not skip a priority just found empty")
	}
	if h.skip(0, t0.Add(emptyHintTTL)) {
		t.Fatal("skips after the TTL")
	}
	// A job published to it since: fetch again.
	h.publishedTo(0)
	if h.skip(0, t0) {
		t.Fatal("skips a priority a job was published to")
	}
	// A fetch that read the count before a publish it may have missed
	// does not make the priority empty.
	seen = h.seen(0)
	h.publishedTo(0)
	h.foundEmpty(0, seen, t0)
	if h.skip(0, t0) {
		t.Fatal("skips though a job was published during the empty fetch")
	}
	// Nor does one right after a publish (the stream may not have the
	// job yet).
	h.publishedTo(0)
	now := time.Now()
	h.foundEmpty(0, h.seen(0), now)
	if h.skip(0, now) {
		t.Fatal("skips a priority found empty right after a publish to it")
	}
	// The lowest priority is always fetched.
	h.foundEmpty(2, h.seen(2), t0)
	if h.skip(2, t0) {
		t.Fatal("skips the lowest priority")
	}
	var none *emptyHint
	none.publishedTo(0)
	none.foundEmpty(0, none.seen(0), t0)
	if none.skip(0, t0) {
		t.Fatal("a nil hint skips")
	}
}
