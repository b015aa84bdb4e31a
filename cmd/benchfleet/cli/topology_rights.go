package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// errNotAdmin: the server refused a JetStream API call of `topology
// apply` (a stream or consumer create or update) to this user.
var errNotAdmin = errors.New("not allowed to change the topology")

// refusedAPI watches nc for the server refusing a JetStream API publish
// (nats.go reports it asynchronously, as the connection's last error; the
// request itself only times out) and cancels ctx with errNotAdmin naming
// the refusal. The returned stop ends the watch.
func refusedAPI(ctx context.Context, nc *nats.Conn) (context.Context, func()) {
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
				cancel(fmt.Errorf("%w: %v", errNotAdmin, err))
				return
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// notAdminErr says who may apply the topology, for a refused apply.
func (a *app) notAdminErr(err error) error {
	who := "this user"
	if a.user != "" {
		who = fmt.Sprintf("user %q", a.user)
	}
	return usageErr("topology apply: %s may not change the topology (%v): run it as the admin user (--user admin, its password in NATS_PASSWORD or NATS_PASSWORD_FILE; on deploy/nats producers and workers only create what is missing)",
		who, strings.TrimPrefix(err.Error(), errNotAdmin.Error()+": "))
}
