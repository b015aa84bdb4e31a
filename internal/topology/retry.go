package topology

import (
	"context"
	"errors"
)

// Retry calls fn, each call with a deadline of c.CallTimeout, again while
// JetStream does not answer (a leader election, a lost quorum: calls that
// time out at once are retried at once, quick refusals with backoff from
// 250ms to 2s), until fn succeeds, JetStream answers with an error of its
// own (returned as it is), or ctx's deadline passes (c.Timeout from now
// when ctx has none): then the error is an *UnavailableError, which Is
// ErrUnavailable. object names what is asked for ("bucket bench-workers"),
// in the warning logged on the first retry and in the error. No call waits
// on ctx's deadline alone.
func Retry(ctx context.Context, c Config, object string, fn func(context.Context) error) error {
	c = c.WithDefaults()
	ctx, cancel := withDefaultTimeout(ctx, c.Timeout)
	defer cancel()
	return (&retrier{c: c}).do(ctx, object, fn)
}

// Unavailable reports whether err, returned by a JetStream call made under
// ctx, says JetStream did not answer (the call's own deadline, no
// responders, "no leader" refusals, an *UnavailableError) rather than
// answering: the error a caller that retries on its own schedule (a
// waiter) takes for an outage. A ctx that ended is not an outage.
func Unavailable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	return errors.Is(err, ErrUnavailable) || classify(ctx, err) != available
}
