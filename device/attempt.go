package device

import "context"

type attemptKey struct{}

// WithAttempt records the delivery attempt (1-based) of the job being run.
func WithAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, attemptKey{}, attempt)
}

// AttemptFrom returns the attempt recorded by WithAttempt, or 1.
func AttemptFrom(ctx context.Context) int {
	if a, ok := ctx.Value(attemptKey{}).(int); ok && a > 0 {
		return a
	}
	return 1
}
