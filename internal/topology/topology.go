// Package topology creates benchfleet's JetStream streams, consumers and KV
// buckets (docs/ARCHITECTURE.md, "NATS topology"). Apply (an operator's `benchfleet topology apply`, as
// the admin user) creates or updates every object; Ensure (producers and
// workers) only creates what is missing and never changes what exists, so
// their credentials need no update rights.
package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
)

// Config tunes the topology. Zero values take the defaults.
type Config struct {
	// AckWait is how long a claimed job may go without an ack or an
	// InProgress before it is redelivered (default 60s).
	AckWait time.Duration
	// Replicas of every stream and bucket (default 1; 3 in a cluster).
	Replicas int
	// EventsMaxAge bounds BENCH_EVENTS retention (default 7 days).
	EventsMaxAge time.Duration
	// DeadMaxAge bounds BENCH_DEAD retention (default 90 days).
	DeadMaxAge time.Duration
	// DuplicateWindow is the job stream's Nats-Msg-Id window (default 2h,
	// at least 1h).
	DuplicateWindow time.Duration
	// WorkerTTL is how long a worker heartbeat stays without renewal
	// (default 30s).
	WorkerTTL time.Duration
	// UntrustedMaxBytes bounds BENCH_UNTRUSTED, the untrusted producer's
	// jobs (default DefaultUntrustedMaxBytes, 256 MiB). A full stream
	// refuses that producer's new jobs; BENCH_JOBS is not touched.
	UntrustedMaxBytes int64
	// UntrustedMaxPerQueue bounds the jobs queued in BENCH_UNTRUSTED per
	// pool and priority (its MaxMsgsPerSubject; default
	// DefaultUntrustedMaxPerQueue, 1000). A full queue refuses new jobs.
	UntrustedMaxPerQueue int64
	// Timeout bounds Ensure, Apply and Open when their ctx has no deadline
	// (default 30s): while JetStream does not answer (a leader election,
	// a lost quorum) they retry with backoff until then, and then return
	// an error that Is ErrUnavailable.
	Timeout time.Duration
	// CallTimeout bounds each JetStream API call of a retry (default 3s):
	// a request sent while a stream has no leader is never answered, so a
	// retry after a new leader is elected must not wait behind it.
	CallTimeout time.Duration
	// Log receives a warning when JetStream does not answer and the call
	// is retried (the cluster electing a leader). Default: no logs.
	Log zerolog.Logger
}

// Defaults for Config.
const (
	DefaultAckWait         = 60 * time.Second
	DefaultEventsMaxAge    = 7 * 24 * time.Hour
	DefaultDeadMaxAge      = 90 * 24 * time.Hour
	DefaultDuplicateWindow = 2 * time.Hour
	// DefaultWorkerTTL keeps a worker's last heartbeat an hour after it
	// stopped heartbeating: readers list a worker silent for over
	// protocol.WorkerStaleAfter as lost, with what it was running. A
	// worker that stops cleanly removes its record.
	DefaultWorkerTTL   = time.Hour
	DefaultTimeout     = 30 * time.Second
	DefaultCallTimeout = 3 * time.Second
	// MaxJobMsgBytes is the job stream's message size limit, a little over
	// protocol.MaxJobBytes so that oversize jobs reach the worker and are
	// dead-lettered with a reason instead of vanishing at publish.
	MaxJobMsgBytes = 1 << 20
	// MaxJobsBytes bounds BENCH_JOBS (4 GiB: over 60,000 jobs of
	// protocol.MaxJobBytes). The stream discards new messages when full, so
	// a flood is refused at publish and never pushes queued jobs out.
	MaxJobsBytes = 4 << 30
	// MaxEventMsgBytes is BENCH_EVENTS' message size limit (a default
	// nats-server's max payload, whatever the server allows).
	MaxEventMsgBytes = 1 << 20
	// MaxEventsBytes bounds BENCH_EVENTS (4 GiB); when full, the oldest
	// events go first, as with EventsMaxAge.
	MaxEventsBytes = 4 << 30
	// DefaultUntrustedMaxBytes bounds BENCH_UNTRUSTED (256 MiB: 4,000
	// jobs of protocol.MaxJobBytes), discard new.
	DefaultUntrustedMaxBytes = 256 << 20
	// DefaultUntrustedMaxPerQueue bounds the untrusted producer's queued
	// jobs per pool and priority, discard new.
	DefaultUntrustedMaxPerQueue = 1000
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.EventsMaxAge <= 0 {
		c.EventsMaxAge = DefaultEventsMaxAge
	}
	if c.DeadMaxAge <= 0 {
		c.DeadMaxAge = DefaultDeadMaxAge
	}
	if c.DuplicateWindow < time.Hour {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.WorkerTTL <= 0 {
		c.WorkerTTL = DefaultWorkerTTL
	}
	if c.UntrustedMaxBytes <= 0 {
		c.UntrustedMaxBytes = DefaultUntrustedMaxBytes
	}
	if c.UntrustedMaxPerQueue <= 0 {
		c.UntrustedMaxPerQueue = DefaultUntrustedMaxPerQueue
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}

// Handles are the topology's objects, ready to use.
type Handles struct {
	Jobs jetstream.Stream
	// Untrusted is BENCH_UNTRUSTED, the untrusted producer's jobs (nil
	// from Open on a topology applied before that stream existed).
	Untrusted jetstream.Stream
	Events    jetstream.Stream
	Dead      jetstream.Stream
	Workers   jetstream.KeyValue
	Runs      jetstream.KeyValue
	Health    jetstream.KeyValue
}

// Ensure opens every stream, consumer and bucket, creating only those that
// are missing; an existing object is used as it is, even when its settings
// differ from c (changing them is Apply's job). It is safe to call from many
// processes at once. On a deployment whose producers and workers may not
// create objects, run Apply once as the admin user first.
func Ensure(ctx context.Context, js jetstream.JetStream, c Config) (*Handles, error) {
	return build(ctx, js, c, false)
}

// Apply creates or updates every stream, consumer and bucket to c: the
// operator's command (`benchfleet topology apply`), which needs stream and
// consumer update rights. It is safe to call from many processes at once.
func Apply(ctx context.Context, js jetstream.JetStream, c Config) (*Handles, error) {
	return build(ctx, js, c, true)
}

func build(ctx context.Context, js jetstream.JetStream, c Config, update bool) (*Handles, error) {
	c = c.WithDefaults()
	ctx, cancel := withDefaultTimeout(ctx, c.Timeout)
	defer cancel()
	r := &retrier{c: c}
	var h Handles
	var err error
	h.Jobs, err = r.ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:        protocol.StreamJobs,
		Description: "benchfleet: queued benchmark jobs",
		Subjects:    jobSubjects(),
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  c.DuplicateWindow,
		Replicas:    c.Replicas,
		MaxMsgSize:  MaxJobMsgBytes,
		MaxBytes:    MaxJobsBytes,
		Discard:     jetstream.DiscardNew,
	})
	if err != nil {
		return nil, err
	}
	h.Untrusted, err = r.ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:                 protocol.StreamUntrusted,
		Description:          "benchfleet: queued jobs of the untrusted producer (fork pull requests)",
		Subjects:             untrustedSubjects(),
		Retention:            jetstream.WorkQueuePolicy,
		Storage:              jetstream.FileStorage,
		Duplicates:           c.DuplicateWindow,
		Replicas:             c.Replicas,
		MaxMsgSize:           MaxJobMsgBytes,
		MaxBytes:             c.UntrustedMaxBytes,
		MaxMsgsPerSubject:    c.UntrustedMaxPerQueue,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
	})
	if err != nil {
		return nil, err
	}
	h.Events, err = r.ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:        protocol.StreamEvents,
		Description: "benchfleet: job status and progress events",
		Subjects:    []string{protocol.SubjectEventsPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      c.EventsMaxAge,
		Duplicates:  2 * time.Minute,
		Replicas:    c.Replicas,
		MaxMsgSize:  MaxEventMsgBytes,
		MaxBytes:    MaxEventsBytes,
	})
	if err != nil {
		return nil, err
	}
	h.Dead, err = r.ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:        protocol.StreamDead,
		Description: "benchfleet: dead-lettered jobs with their reason",
		Subjects:    []string{protocol.SubjectDeadPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      c.DeadMaxAge,
		Duplicates:  2 * time.Minute,
		Replicas:    c.Replicas,
		MaxMsgSize:  4 * MaxJobMsgBytes,
	})
	if err != nil {
		return nil, err
	}
	for _, q := range protocol.AllQueues() {
		if _, err := r.ensureConsumer(ctx, js, q, c.AckWait, update); err != nil {
			return nil, err
		}
	}
	h.Workers, err = r.ensureKV(ctx, js, update, jetstream.KeyValueConfig{
		Bucket:      protocol.BucketWorkers,
		Description: "benchfleet: worker heartbeats",
		TTL:         c.WorkerTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, err
	}
	h.Runs, err = r.ensureKV(ctx, js, update, jetstream.KeyValueConfig{
		Bucket:       protocol.BucketRuns,
		Description:  "benchfleet: run manifests and cancel flags",
		Storage:      jetstream.FileStorage,
		Replicas:     c.Replicas,
		MaxValueSize: MaxJobMsgBytes, // manifests of big runs are chunked (producer)
	})
	if err != nil {
		return nil, err
	}
	h.Health, err = r.ensureKV(ctx, js, update, jetstream.KeyValueConfig{
		Bucket:       protocol.BucketHealth,
		Description:  "benchfleet: Tenstorrent boards' quarantine and failure history",
		Storage:      jetstream.FileStorage,
		Replicas:     c.Replicas,
		MaxValueSize: 256 << 10,
	})
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// jobSubjects lists exactly the job subjects of the known pools and
// priorities, so a publish for an unknown pool or priority fails at once
// (no stream takes it) instead of waiting forever for a consumer.
func jobSubjects() []string {
	var out []string
	for _, pool := range protocol.Pools {
		for _, prio := range protocol.Priorities {
			out = append(out, protocol.JobSubject(pool, prio))
		}
	}
	return out
}

// untrustedSubjects lists exactly the untrusted queues' subjects.
func untrustedSubjects() []string {
	var out []string
	for _, q := range protocol.AllQueues() {
		if q.Trust.Untrusted() {
			out = append(out, q.Subject())
		}
	}
	return out
}

// EnsureConsumer opens the durable pull consumer of one queue (a pool and
// priority of BENCH_JOBS or BENCH_UNTRUSTED), creating it (with ackWait) only when it is missing. MaxDeliver is
// unlimited on the server: the worker enforces its own limit so that a job
// whose last delivery died with its worker is still seen and dead-lettered,
// never silently parked. Like Ensure it retries while JetStream does not
// answer, for DefaultTimeout when ctx has no deadline (then the error Is
// ErrUnavailable).
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, q protocol.Queue, ackWait time.Duration) (jetstream.Consumer, error) {
	c := Config{}.WithDefaults()
	ctx, cancel := withDefaultTimeout(ctx, c.Timeout)
	defer cancel()
	return (&retrier{c: c}).ensureConsumer(ctx, js, q, ackWait, false)
}

func (r *retrier) ensureConsumer(ctx context.Context, js jetstream.JetStream, q protocol.Queue, ackWait time.Duration, update bool) (jetstream.Consumer, error) {
	if ackWait <= 0 {
		ackWait = DefaultAckWait
	}
	name, stream := q.Consumer(), q.Stream()
	desc := fmt.Sprintf("benchfleet: %s jobs at %s priority", q.Pool, q.Priority)
	if q.Trust.Untrusted() {
		desc = fmt.Sprintf("benchfleet: the untrusted producer's %s jobs at %s priority", q.Pool, q.Priority)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		Description:   desc,
		FilterSubject: q.Subject(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: 10000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	var cons jetstream.Consumer
	err := r.do(ctx, "consumer "+name, func(ctx context.Context) error {
		var err error
		if update {
			cons, err = js.CreateOrUpdateConsumer(ctx, stream, cfg)
			return err
		}
		cons, err = js.Consumer(ctx, stream, name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = js.CreateConsumer(ctx, stream, cfg)
			if errors.Is(err, jetstream.ErrConsumerExists) {
				cons, err = js.Consumer(ctx, stream, name)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: consumer %s: %w", name, err)
	}
	return cons, nil
}

func (r *retrier) ensureStream(ctx context.Context, js jetstream.JetStream, update bool, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := r.do(ctx, "stream "+cfg.Name, func(ctx context.Context) error {
		var err error
		if update {
			s, err = js.CreateOrUpdateStream(ctx, cfg)
			return err
		}
		s, err = js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = js.Stream(ctx, cfg.Name)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// ErrUnavailable is what the topology calls return (wrapped in an
// *UnavailableError) when JetStream did not answer within their deadline:
// the cluster is electing a leader or has lost its quorum, or JetStream is
// not (yet) enabled on the server. Callers branch on it with errors.Is (the
// command line exits 69, "could not reach").
var ErrUnavailable = errors.New("JetStream unavailable")

// UnavailableError says which object JetStream did not answer for, how
// long it was tried, and why it is taken for unavailable.
type UnavailableError struct {
	// Object is what was asked for, e.g. "stream BENCH_JOBS" (the error
	// text leaves it to the wrapping message, which names it).
	Object string
	// Waited is the time from the first attempt to the last answer (or
	// the deadline); Attempts counts the calls.
	Waited   time.Duration
	Attempts int
	// NoLeader is true when the answers (or their absence: timeouts) say
	// the object or the cluster has no leader; false when JetStream itself
	// is not enabled or not started on the server.
	NoLeader bool
	// Err is the last call's error.
	Err error
}

func (e *UnavailableError) Error() string {
	if e.NoLeader {
		return fmt.Sprintf("no JetStream leader answered in %s (%d attempts): the NATS cluster is electing a leader, or has lost its quorum (a majority of its nodes down): %v",
			e.Waited.Round(100*time.Millisecond), e.Attempts, e.Err)
	}
	return fmt.Sprintf("JetStream did not answer in %s (%d attempts): it is not enabled, or not started yet, on the NATS server: %v",
		e.Waited.Round(100*time.Millisecond), e.Attempts, e.Err)
}

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the last call's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// JetStream error codes that mean "no leader to answer, try again".
const (
	errCodeClusterIncomplete jetstream.ErrorCode = 10004 // incomplete results
	errCodeNoPeers           jetstream.ErrorCode = 10005 // no suitable peers for placement (nodes not all joined yet)
	errCodeClusterNotAvail   jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	errCodeClusterNotLeader  jetstream.ErrorCode = 10009 // JetStream cluster can not handle request
	errCodeStreamOffline     jetstream.ErrorCode = 10118 // stream is offline
	errCodeConsumerOffline   jetstream.ErrorCode = 10119 // consumer is offline
)

// unavailability is why a call's error is worth another attempt.
type unavailability int

const (
	available  unavailability = iota // a real answer: do not retry
	noLeader                         // no answer in time, or "no leader" answers
	notEnabled                       // no JetStream responder at all
)

// classify tells a call's error that another attempt may cure from one it
// will not. ctx is the whole operation's: a deadline of the call's own
// (ctx still alive) means nobody answered.
func classify(ctx context.Context, err error) unavailability {
	if ctx.Err() != nil {
		return available
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return available // configuration, not a passing state
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders) {
		return notEnabled
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return noLeader
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterIncomplete, errCodeNoPeers, errCodeClusterNotAvail, errCodeClusterNotLeader,
			errCodeStreamOffline, errCodeConsumerOffline:
			return noLeader
		}
		if apiErr.Code == 503 || apiErr.Code == 500 {
			return noLeader
		}
	}
	// The KV watchers (ListKeys) still report the older API's error type.
	var legacy *nats.APIError
	if errors.As(err, &legacy) {
		switch jetstream.ErrorCode(legacy.ErrorCode) {
		case errCodeClusterIncomplete, errCodeNoPeers, errCodeClusterNotAvail, errCodeClusterNotLeader,
			errCodeStreamOffline, errCodeConsumerOffline:
			return noLeader
		}
		if legacy.Code == 503 || legacy.Code == 500 {
			return noLeader
		}
	}
	return available
}

// retrier runs JetStream API calls, each with its own short deadline,
// again with backoff while JetStream does not answer, until the ctx's
// deadline.
type retrier struct {
	c      Config
	warned bool
}

// withDefaultTimeout gives ctx a deadline d from now unless it has one.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// do calls fn (with a deadline of CallTimeout) until it succeeds, fails
// for good, or ctx ends. Calls that got no answer are retried at once,
// quick refusals ("temporarily unavailable") with backoff from 250ms to 2s.
// When ctx's deadline passes while JetStream is not answering, the error is
// an *UnavailableError.
func (r *retrier) do(ctx context.Context, object string, fn func(context.Context) error) error {
	start := time.Now()
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, r.c.CallTimeout)
		t0 := time.Now()
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		why := classify(ctx, err)
		if why == available {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded) {
				// The whole deadline passed with no answer.
				return &UnavailableError{Object: object, Waited: time.Since(start), Attempts: attempt, NoLeader: true, Err: err}
			}
			return err
		}
		if !r.warned {
			r.warned = true
			msg := "JetStream is not answering (the NATS cluster is electing a leader?); retrying"
			if why == notEnabled {
				msg = "JetStream is not answering (not enabled, or not started yet?); retrying"
			}
			r.c.Log.Warn().Str("component", "topology").Str("object", object).Err(err).Msg(msg)
		}
		wait := backoff
		if time.Since(t0) >= r.c.CallTimeout/2 {
			wait = 100 * time.Millisecond // it waited already
		} else {
			backoff = min(2*backoff, 2*time.Second)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return &UnavailableError{Object: object, Waited: time.Since(start), Attempts: attempt, NoLeader: why == noLeader, Err: err}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &UnavailableError{Object: object, Waited: time.Since(start), Attempts: attempt, NoLeader: why == noLeader, Err: err}
			}
			return err
		case <-time.After(wait):
		}
	}
}

// Open returns the handles of an existing topology without changing it,
// for read-only commands (a reader credential may not create streams).
// Like Ensure it retries while JetStream does not answer, for
// DefaultTimeout when ctx has no deadline (then the error Is
// ErrUnavailable); a missing object is an error at once.
func Open(ctx context.Context, js jetstream.JetStream) (*Handles, error) {
	c := Config{}.WithDefaults()
	ctx, cancel := withDefaultTimeout(ctx, c.Timeout)
	defer cancel()
	r := &retrier{c: c}
	var h Handles
	stream := func(name, hint string) (jetstream.Stream, error) {
		var s jetstream.Stream
		err := r.do(ctx, "stream "+name, func(ctx context.Context) error {
			var err error
			s, err = js.Stream(ctx, name)
			return err
		})
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("topology: stream %s: %w%s", name, err, hint)
		}
		if err != nil {
			return nil, fmt.Errorf("topology: stream %s: %w", name, err)
		}
		return s, nil
	}
	bucket := func(name string) (jetstream.KeyValue, error) {
		var kv jetstream.KeyValue
		err := r.do(ctx, "bucket "+name, func(ctx context.Context) error {
			var err error
			kv, err = js.KeyValue(ctx, name)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("topology: bucket %s: %w", name, err)
		}
		return kv, nil
	}
	var err error
	if h.Jobs, err = stream(protocol.StreamJobs, " (has a worker or producer created it?)"); err != nil {
		return nil, err
	}
	// BENCH_UNTRUSTED is newer than the other streams: a topology applied
	// before it existed opens without it (Handles.Untrusted nil) until
	// `topology apply` creates it.
	if h.Untrusted, err = stream(protocol.StreamUntrusted, ""); errors.Is(err, jetstream.ErrStreamNotFound) {
		h.Untrusted = nil
	} else if err != nil {
		return nil, err
	}
	if h.Events, err = stream(protocol.StreamEvents, ""); err != nil {
		return nil, err
	}
	if h.Dead, err = stream(protocol.StreamDead, ""); err != nil {
		return nil, err
	}
	if h.Workers, err = bucket(protocol.BucketWorkers); err != nil {
		return nil, err
	}
	if h.Runs, err = bucket(protocol.BucketRuns); err != nil {
		return nil, err
	}
	if h.Health, err = bucket(protocol.BucketHealth); err != nil {
		return nil, err
	}
	return &h, nil
}
