package topology

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrNotAdmin is what the cause of WatchRefusal's context Is when the
// server refused a JetStream API call (a stream or consumer create or
// update) to the connection's user.
var ErrNotAdmin = errors.New("not allowed to change the topology")

// WatchRefusal watches nc for the server refusing a JetStream API publish
// (nats.go reports it asynchronously, as the connection's last error; the
// request itself only times out) and cancels the returned ctx with a cause
// that Is ErrNotAdmin and names the refusal. stop ends the watch.
func WatchRefusal(ctx context.Context, nc *nats.Conn) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), "$JS.API.") {
				cancel(fmt.Errorf("%w: %v", ErrNotAdmin, err))
				return
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}
