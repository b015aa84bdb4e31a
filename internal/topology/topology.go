// Package topology creates benchfleet's JetStream streams, consumers and KV
// buckets (DESIGN §3). Apply (an operator's `benchfleet topology apply`, as
// the admin user) creates or updates every object; Ensure (producers and
// workers) only creates what is missing and never changes what exists, so
// their credentials need no update rights.
package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
}

// Defaults for Config.
const (
	DefaultAckWait         = 60 * time.Second
	DefaultEventsMaxAge    = 7 * 24 * time.Hour
	DefaultDeadMaxAge      = 90 * 24 * time.Hour
	DefaultDuplicateWindow = 2 * time.Hour
	DefaultWorkerTTL       = 30 * time.Second
	// MaxJobMsgBytes is the job stream's message size limit, a little over
	// protocol.MaxJobBytes so that oversize jobs reach the worker and are
	// dead-lettered with a reason instead of vanishing at publish.
	MaxJobMsgBytes = 1 << 20
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
	return c
}

// Handles are the topology's objects, ready to use.
type Handles struct {
	Jobs    jetstream.Stream
	Events  jetstream.Stream
	Dead    jetstream.Stream
	Workers jetstream.KeyValue
	Runs    jetstream.KeyValue
	Health  jetstream.KeyValue
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
	if ctx.Err() == nil {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
		}
	}
	var h Handles
	var err error
	h.Jobs, err = ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:        protocol.StreamJobs,
		Description: "benchfleet: queued benchmark jobs",
		Subjects:    jobSubjects(),
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  c.DuplicateWindow,
		Replicas:    c.Replicas,
		MaxMsgSize:  MaxJobMsgBytes,
	})
	if err != nil {
		return nil, err
	}
	h.Events, err = ensureStream(ctx, js, update, jetstream.StreamConfig{
		Name:        protocol.StreamEvents,
		Description: "benchfleet: job status and progress events",
		Subjects:    []string{protocol.SubjectEventsPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      c.EventsMaxAge,
		Duplicates:  2 * time.Minute,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, err
	}
	h.Dead, err = ensureStream(ctx, js, update, jetstream.StreamConfig{
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
	for _, pool := range protocol.Pools {
		for _, prio := range protocol.Priorities {
			if _, err := ensureConsumer(ctx, js, pool, prio, c.AckWait, update); err != nil {
				return nil, err
			}
		}
	}
	h.Workers, err = ensureKV(ctx, js, update, jetstream.KeyValueConfig{
		Bucket:      protocol.BucketWorkers,
		Description: "benchfleet: worker heartbeats",
		TTL:         c.WorkerTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, err
	}
	h.Runs, err = ensureKV(ctx, js, update, jetstream.KeyValueConfig{
		Bucket:       protocol.BucketRuns,
		Description:  "benchfleet: run manifests and cancel flags",
		Storage:      jetstream.FileStorage,
		Replicas:     c.Replicas,
		MaxValueSize: MaxJobMsgBytes, // manifests of big runs are chunked (producer)
	})
	if err != nil {
		return nil, err
	}
	h.Health, err = ensureKV(ctx, js, update, jetstream.KeyValueConfig{
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

// EnsureConsumer opens the durable pull consumer of one pool and priority,
// creating it (with ackWait) only when it is missing. MaxDeliver is
// unlimited on the server: the worker enforces its own limit so that a job
// whose last delivery died with its worker is still seen and dead-lettered,
// never silently parked.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, pool string, prio protocol.Priority, ackWait time.Duration) (jetstream.Consumer, error) {
	return ensureConsumer(ctx, js, pool, prio, ackWait, false)
}

func ensureConsumer(ctx context.Context, js jetstream.JetStream, pool string, prio protocol.Priority, ackWait time.Duration, update bool) (jetstream.Consumer, error) {
	if ackWait <= 0 {
		ackWait = DefaultAckWait
	}
	name := protocol.ConsumerName(pool, prio)
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		Description:   fmt.Sprintf("benchfleet: %s jobs at %s priority", pool, prio),
		FilterSubject: protocol.JobSubject(pool, prio),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: 10000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	var cons jetstream.Consumer
	err := retryConflict(ctx, func() error {
		var err error
		if update {
			cons, err = js.CreateOrUpdateConsumer(ctx, protocol.StreamJobs, cfg)
			return err
		}
		cons, err = js.Consumer(ctx, protocol.StreamJobs, name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = js.CreateConsumer(ctx, protocol.StreamJobs, cfg)
			if errors.Is(err, jetstream.ErrConsumerExists) {
				cons, err = js.Consumer(ctx, protocol.StreamJobs, name)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: consumer %s: %w", name, err)
	}
	return cons, nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, update bool, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := retryConflict(ctx, func() error {
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

func ensureKV(ctx context.Context, js jetstream.JetStream, update bool, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := retryConflict(ctx, func() error {
		var err error
		if update {
			kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
			return err
		}
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = js.KeyValue(ctx, cfg.Bucket)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// errCodeNoPeers is JetStream's error code for "no suitable peers for
// placement".
const errCodeNoPeers jetstream.ErrorCode = 10005

// retryConflict retries fn while the server is electing leaders or another
// process is creating the same object at the same moment.
func retryConflict(ctx context.Context, fn func() error) error {
	var err error
	for i := 0; i < 40; i++ {
		err = fn()
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		transient := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
			errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
			(errors.As(err, &apiErr) && (apiErr.Code == 503 || apiErr.Code == 500 ||
				// "no suitable peers for placement": a cluster whose nodes
				// have not all joined JetStream yet (starting, restarting).
				apiErr.ErrorCode == errCodeNoPeers))
		if !transient || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
	return err
}

// Open returns the handles of an existing topology without changing it,
// for read-only commands (a reader credential may not create streams).
func Open(ctx context.Context, js jetstream.JetStream) (*Handles, error) {
	var h Handles
	var err error
	if h.Jobs, err = js.Stream(ctx, protocol.StreamJobs); err != nil {
		return nil, fmt.Errorf("topology: stream %s: %w (has a worker or producer created it?)", protocol.StreamJobs, err)
	}
	if h.Events, err = js.Stream(ctx, protocol.StreamEvents); err != nil {
		return nil, fmt.Errorf("topology: stream %s: %w", protocol.StreamEvents, err)
	}
	if h.Dead, err = js.Stream(ctx, protocol.StreamDead); err != nil {
		return nil, fmt.Errorf("topology: stream %s: %w", protocol.StreamDead, err)
	}
	if h.Workers, err = js.KeyValue(ctx, protocol.BucketWorkers); err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", protocol.BucketWorkers, err)
	}
	if h.Runs, err = js.KeyValue(ctx, protocol.BucketRuns); err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", protocol.BucketRuns, err)
	}
	if h.Health, err = js.KeyValue(ctx, protocol.BucketHealth); err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", protocol.BucketHealth, err)
	}
	return &h, nil
}
