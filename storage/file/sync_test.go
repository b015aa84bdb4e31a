package file

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// A writer's wait is answered only by a flush that started after it
// called: a flush already running when it arrives does not count.
func TestGroupSyncWaitsForALaterFlush(t *testing.T) {
	t.Parallel()
	inFlush := make(chan struct{})
	release := make(chan struct{})
	var flushes atomic.Int64
	g := newGroupSync(func() error {
		if flushes.Add(1) == 1 {
			close(inFlush)
			<-release
		}
		return nil
	})
	first := make(chan error, 1)
	go func() { first <- g.wait() }()
	<-inFlush // flush 1 is running
	second := make(chan error, 1)
	go func() { second <- g.wait() }()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := flushes.Load(); n != 2 {
		t.Fatalf("%d flushes, want 2 (the second writer arrived during the first)", n)
	}
}

func TestGroupSyncSharesFlushesAndReportsErrors(t *testing.T) {
	t.Parallel()
	var flushes atomic.Int64
	boom := errors.New("boom")
	var fail atomic.Bool
	g := newGroupSync(func() error {
		flushes.Add(1)
		if fail.Load() {
			return boom
		}
		return nil
	})
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.wait(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := flushes.Load(); n < 1 || n > 64 {
		t.Fatalf("%d flushes for 64 writers", n)
	}
	fail.Store(true)
	if err := g.wait(); !errors.Is(err, boom) {
		t.Fatalf("wait after a failed flush: %v, want boom", err)
	}
}
