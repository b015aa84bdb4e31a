package build

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/protocol"
)

// The defaults' arithmetic: what a fetch may take by the wheel's size,
// and that even a wheel of 1 GiB sent at the slowest rate allowed ends
// well before a job's default timeout (the worker's 30 minutes), while a
// store that stops sending frees its slots within DefaultFetchTimeout.
func TestFetchDeadlineArithmetic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size int64
		want time.Duration
	}{
		{0, 31 * time.Second},
		{mib - 1, 31 * time.Second},
		{mib, 32 * time.Second},
		{100 * mib, 2*time.Minute + 11*time.Second},
		{1 << 30, 17*time.Minute + 35*time.Second},
		{MaxWheelBytes, time.Hour + 8*time.Minute + 47*time.Second},
	} {
		if got := FetchDeadline(c.size, DefaultFetchTimeout, DefaultFetchPerMiB); got != c.want {
			t.Errorf("FetchDeadline(%d bytes) = %s, want %s", c.size, got, c.want)
		}
	}
	const defaultJobTimeout = 30 * time.Minute // worker.Config.JobTimeout's default
	if d := FetchDeadline(1<<30, DefaultFetchTimeout, DefaultFetchPerMiB); d >= defaultJobTimeout {
		t.Errorf("a 1 GiB wheel may take %s, past a job's default timeout", d)
	}
	if DefaultFetchTimeout >= defaultJobTimeout/10 {
		t.Errorf("a hung store holds its slots for %s", DefaultFetchTimeout)
	}
}

// fetchCache is a cache whose store sends a wheel through body.
func fetchCache(t *testing.T, timeout, perMiB time.Duration, body func(ctx context.Context) io.ReadCloser) *Cache {
	t.Helper()
	c, err := New(Config{Dir: filepath.Join(buildtest.Dir(t), "cache"), FetchTimeout: timeout, FetchPerMiB: perMiB,
		Fetch:    func(ctx context.Context, _ string) (io.ReadCloser, error) { return body(ctx), nil },
		NotFound: func(error) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stalledBody sends first, then nothing until ctx ends, when its read
// fails with ctx's cause (as an HTTP body of the request's ctx does).
func stalledBody(first int) func(ctx context.Context) io.ReadCloser {
	return func(ctx context.Context) io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(make([]byte, first))
			<-ctx.Done()
			pw.CloseWithError(context.Cause(ctx))
		}()
		return pr
	}
}

var testWheel = protocol.Wheel{URL: protocol.BuildKey(strings.Repeat("ab", 32), "w-1.0-py3-none-any.whl"), SHA256: strings.Repeat("ab", 32)}

// A store that stops sending mid-wheel ends the fetch after FetchTimeout
// without a byte, whatever the caller's ctx allows, with a
// *device.StoreError that holds no ctx error: the caller that waited for
// the same wheel gets the same error at once instead of trying again
// itself.
func TestStalledFetchFailsItAndItsWaiters(t *testing.T) {
	t.Parallel()
	c := fetchCache(t, 300*time.Millisecond, time.Second, stalledBody(64<<10))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a job's
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = c.fetchWheels(ctx, []protocol.Wheel{testWheel}, io.Discard) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the fetch ran until the job's ctx ended")
	}
	for i, err := range errs {
		if !device.IsStore(err) || ctxErr(err) || !strings.Contains(err.Error(), "nothing for 300ms (after 65536 bytes)") {
			t.Errorf("fetch %d: %v (store %v, ctx error %v), want a store error saying it sent nothing for 300ms after 64 KiB", i, err, device.IsStore(err), ctxErr(err))
		}
	}
}

// A store that sends, but slower than FetchPerMiB allows, is taken for a
// hung one too.
func TestTricklingFetchIsTheStores(t *testing.T) {
	t.Parallel()
	c := fetchCache(t, 500*time.Millisecond, 100*time.Millisecond, func(ctx context.Context) io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			for ctx.Err() == nil {
				if _, err := pw.Write(make([]byte, 1024)); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			pw.CloseWithError(context.Cause(ctx))
		}()
		return pr
	})
	_, _, err := c.fetchWheels(t.Context(), []protocol.Wheel{testWheel}, io.Discard)
	var se *device.StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "too slowly") {
		t.Fatalf("fetch: %v, want a store error saying it sent too slowly", err)
	}
}
