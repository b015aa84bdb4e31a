package worker

import (
	"sync"
	"time"
)

// emptyHintTTL is how long a fetch that found a priority's consumer empty
// lets the pool's slots skip that consumer (while no job is published to
// it). It bounds how long a job that reappears without a publish (a
// redelivery after another worker's NAK or an ack-wait expiry) can wait
// behind jobs of a lower priority.
const emptyHintTTL = 100 * time.Millisecond

// publishGrace is how long after a job's publish was seen a fetch that
// finds its priority empty proves nothing: the core subscription can see
// the publish before the stream has stored the job.
const publishGrace = 20 * time.Millisecond

// emptyHint remembers, for the priorities of one pool, that a fetch came
// back empty, so a busy pool claims a normal job with one fetch instead of
// first asking the (empty) high consumer every time. The pool's core
// subscription counts every job published to each priority; a priority is
// skipped only while no publish was seen since a fetch (started after the
// count was read, and more than publishGrace after the last publish) found
// it empty, and for at most emptyHintTTL. Only a fetch that went on to
// claim a job of a lower priority records its priority empty (slot.next),
// so an idle slot woken by a publish always asks every priority. The
// lowest priority is always fetched.
type emptyHint struct {
	mu   sync.Mutex
	prio []hintState
}

type hintState struct {
	published uint64    // jobs seen published to this priority
	lastPub   time.Time // when the last of them was seen
	emptyAt   time.Time // when the last fetch that found it empty started
	emptySeen uint64    // published as read before that fetch
	known     bool
}

func newEmptyHint(priorities int) *emptyHint {
	return &emptyHint{prio: make([]hintState, priorities)}
}

// publishedTo records a job published (or handed back) to priority i.
func (h *emptyHint) publishedTo(i int) {
	if h == nil || i < 0 || i >= len(h.prio) {
		return
	}
	h.mu.Lock()
	h.prio[i].published++
	h.prio[i].lastPub = time.Now()
	h.mu.Unlock()
}

// seen is priority i's publish count, read before a fetch.
func (h *emptyHint) seen(i int) uint64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prio[i].published
}

// foundEmpty records that a fetch of priority i, started at at after the
// count seen was read, came back empty.
func (h *emptyHint) foundEmpty(i int, seen uint64, at time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := &h.prio[i]
	if at.Sub(p.lastPub) < publishGrace {
		return
	}
	if !p.known || at.After(p.emptyAt) {
		p.emptyAt, p.emptySeen, p.known = at, seen, true
	}
}

// skip reports whether priority i is known to be empty now.
func (h *emptyHint) skip(i int, now time.Time) bool {
	if h == nil || i >= len(h.prio)-1 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.prio[i]
	return p.known && p.published == p.emptySeen && now.Sub(p.emptyAt) < emptyHintTTL
}
