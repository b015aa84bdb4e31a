package notify

import (
	"fmt"
	"sync"
	"time"
)

// DefaultRateLimit is how many notifications of one event a Webhook sends
// per minute when Config.RateLimit is 0.
const DefaultRateLimit = 10

// rateLimiter allows at most n messages of each event per minute (a fixed
// window that starts with the first message of the event) and counts the
// ones it holds back, for the next message that goes out to summarize.
type rateLimiter struct {
	n   int
	now func() time.Time
	mu  sync.Mutex
	by  map[string]*window
}

type window struct {
	start      time.Time
	sent, held int
}

func newRateLimiter(n int, now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{n: n, now: now, by: map[string]*window{}}
}

// allow reports whether a message of event may go out now, and how many
// of that event were held back since the last one that went out (to be
// told in this one). A limiter with n < 0 allows everything.
func (l *rateLimiter) allow(event string) (ok bool, held int) {
	if l == nil || l.n < 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w := l.by[event]
	if w == nil {
		w = &window{start: now}
		l.by[event] = w
	}
	if now.Sub(w.start) >= time.Minute {
		w.start, w.sent = now, 0
	}
	if w.sent >= l.n {
		w.held++
		return false, 0
	}
	w.sent++
	held, w.held = w.held, 0
	return true, held
}

// heldNote is the line a message gets when others of its event were held
// back before it.
func heldNote(event string, held, limit int) string {
	return fmt.Sprintf("\n(%d more %s notification(s) were not sent: at most %d a minute)", held, event, limit)
}
