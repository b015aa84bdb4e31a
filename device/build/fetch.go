package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Deadlines of one wheel fetch (Config.FetchTimeout, Config.FetchPerMiB).
// A store that hangs (accepts connections, sends nothing) frees the slots
// waiting for the wheel within DefaultFetchTimeout of its last byte, not
// at the job's timeout; a store that only trickles (less than 1 MiB a
// second on average) is taken for a hung one too.
const (
	// DefaultFetchTimeout is how long the store has to answer a fetch
	// (the first byte of the wheel) and, while the wheel streams, to send
	// its next bytes.
	DefaultFetchTimeout = 30 * time.Second
	// DefaultFetchPerMiB is the time each MiB of a wheel adds to its
	// fetch's deadline (FetchDeadline).
	DefaultFetchPerMiB = time.Second
)

// mib is a mebibyte.
const mib = 1 << 20

// FetchDeadline is the longest a fetch of a wheel of size bytes may take
// with the given deadlines: timeout for the store to answer, plus perMiB
// for each MiB begun (a wheel of 0 to 1 MiB gets one). With the defaults a
// 100 MiB wheel has 2m11s, the largest (MaxWheelBytes, 4 GiB) 1h8m47s.
func FetchDeadline(size int64, timeout, perMiB time.Duration) time.Duration {
	return timeout + time.Duration(size/mib+1)*perMiB
}

// errFetchStalled and errFetchSlow are the causes a fetchGuard ends its
// fetch with.
var (
	errFetchStalled = errors.New("the store sent nothing in time")
	errFetchSlow    = errors.New("the store sent too slowly")
)

// fetchGuard bounds one fetch: it ends the fetch's ctx when the store has
// sent nothing for timeout (to the first byte, or since the last), or
// when the fetch has taken longer than FetchDeadline of the bytes it has
// received so far plus the MiB under way. The reader it wraps counts the
// bytes.
type fetchGuard struct {
	timeout, perMiB time.Duration
	start           time.Time
	cancel          context.CancelCauseFunc
	done            chan struct{}

	mu   sync.Mutex
	n    int64
	last time.Time
}

// guardFetch returns ctx bounded by a fetchGuard; stop releases it.
func guardFetch(ctx context.Context, timeout, perMiB time.Duration) (context.Context, *fetchGuard) {
	gctx, cancel := context.WithCancelCause(ctx)
	now := time.Now()
	g := &fetchGuard{timeout: timeout, perMiB: perMiB, start: now, last: now, cancel: cancel, done: make(chan struct{})}
	go g.watch()
	return gctx, g
}

// watch ends the fetch at the first deadline it misses, or returns at
// stop.
func (g *fetchGuard) watch() {
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
		}
		g.mu.Lock()
		stallAt := g.last.Add(g.timeout)
		slowAt := g.start.Add(FetchDeadline(g.n, g.timeout, g.perMiB))
		g.mu.Unlock()
		now := time.Now()
		switch {
		case !now.Before(stallAt):
			g.cancel(errFetchStalled)
			return
		case !now.Before(slowAt):
			g.cancel(errFetchSlow)
			return
		}
		t.Reset(min(stallAt.Sub(now), slowAt.Sub(now)))
	}
}

// stop releases the fetch's ctx and ends the watch.
func (g *fetchGuard) stop() {
	close(g.done)
	g.cancel(nil)
}

// reader counts what r reads as the fetch's progress.
func (g *fetchGuard) reader(r io.Reader) io.Reader { return guardedReader{r: r, g: g} }

type guardedReader struct {
	r io.Reader
	g *fetchGuard
}

func (gr guardedReader) Read(p []byte) (int, error) {
	n, err := gr.r.Read(p)
	if n > 0 {
		gr.g.mu.Lock()
		gr.g.n += int64(n)
		gr.g.last = time.Now()
		gr.g.mu.Unlock()
	}
	return n, err
}

// ended says why gctx ended the fetch, "" when the guard did not: the
// store's silence or slowness, with what had arrived.
func (g *fetchGuard) ended(gctx context.Context) string {
	cause := context.Cause(gctx)
	if !errors.Is(cause, errFetchStalled) && !errors.Is(cause, errFetchSlow) {
		return ""
	}
	g.mu.Lock()
	n := g.n
	g.mu.Unlock()
	if errors.Is(cause, errFetchStalled) {
		return fmt.Sprintf("%v: nothing for %s (after %d bytes)", cause, g.timeout, n)
	}
	return fmt.Sprintf("%v: %d bytes in %s, over its deadline of %s and %s per MiB", cause, n, time.Since(g.start).Round(time.Second), g.timeout, g.perMiB)
}

// unavailable reports whether a Fetch error is the store's (Config.Unavailable).
func (c *Cache) unavailable(err error) bool {
	return c.unavailableFn == nil || c.unavailableFn(err)
}
