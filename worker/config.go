// Package worker is the device-host side of benchfleet: it claims jobs for
// the devices of one host from JetStream (one slot per device, strict
// priority, never prefetching), runs them through a device.Runner with
// InProgress heartbeats, makes each result durable before the ack, handles
// its failure classes (invalid → dead letter, benchmark failure
// → failed result, infrastructure → reset, health check, NakWithDelay, dead
// letter after MaxDeliver), cancels runs, reports its state to the
// bench-workers bucket and drains gracefully. Its parts of one noun each
// are below it: configfile (the config file and its slot plan), metrics,
// boardhealth (a board's lasting health), hostfault (a job's host-fault
// record) and recorder (what an attempt records).
package worker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/version"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// Sink makes results durable. spool.Spool implements it (spooling to
// local disk while the store is down); DirectSink writes straight to a
// bucket.
type Sink interface {
	// Deliver uploads files and writes r once. spooled reports that r is
	// durable on local disk, not yet in the store. An existing result is
	// reported as storage.ErrExists.
	Deliver(ctx context.Context, r *protocol.Result, files []storage.ArtifactFile) (key string, spooled bool, err error)
}

// DirectSink delivers straight to a bucket with no spool.
type DirectSink struct{ Bucket storage.Bucket }

// Deliver implements Sink. Each store call has StoreCallTimeout (a Put
// also time for its bytes): a store that does not answer fails the
// delivery as unavailable.
func (d DirectSink) Deliver(ctx context.Context, r *protocol.Result, files []storage.ArtifactFile) (string, bool, error) {
	key, err := storage.Deliver(ctx, storage.WithCallTimeout(d.Bucket, StoreCallTimeout), r, files)
	return key, false, err
}

// Slot is one device the worker serves with one runner.
type Slot struct {
	Device device.Device
	Runner device.Runner
	// Health checks and resets the device between jobs (default
	// device.AlwaysHealthy).
	Health device.Health
	// Sampler reads the device's power and temperature while a job runs,
	// every device.SampleInterval; nil for devices without sensors.
	Sampler device.Sampler
}

// DefaultMaxLoopCount is Config.MaxLoopCount's default.
const DefaultMaxLoopCount = 100_000

// Config configures a Worker.
type Config struct {
	// ID names the worker in heartbeats and results (default: hostname).
	ID string
	// Version is reported in heartbeats and results (default: the
	// binary's module version, internal/version; "devel" when its build
	// recorded none).
	Version string
	// Revision is the commit the worker was built from, reported in
	// heartbeats and results (default: the binary's, with "+modified" for
	// a tree with local changes; empty when its build recorded none).
	Revision string
	// Conn is the NATS connection (required).
	Conn *nats.Conn
	// Store is where results are checked for existence (required). Each
	// check has StoreCallTimeout; while the store does not answer, the
	// worker asks it again every few seconds and says so in its status.
	Store storage.Bucket
	// Sink delivers results (default DirectSink{Store}).
	Sink Sink
	// Slots are the devices served (at least one).
	Slots []Slot
	// AckWait is how long a claimed job may go without an InProgress
	// before JetStream redelivers it: the ack wait of the job consumers
	// this worker creates, and the bound of Heartbeat. Consumers that exist
	// keep theirs (only `benchfleet topology apply` changes it). Default 60s.
	AckWait time.Duration
	// Replicas of the streams and buckets this worker creates when they are
	// missing (default 1; 3 on a cluster). Existing ones keep theirs.
	Replicas int
	// MaxDeliver is how many deliveries a job gets before it is dead
	// lettered (default 4).
	MaxDeliver int
	// Heartbeat is the InProgress interval while a job runs and the worker
	// status interval (default AckWait/3).
	Heartbeat time.Duration
	// JobTimeout bounds one attempt when the job sets no limit (default 30m).
	JobTimeout time.Duration
	// MaxJobTimeout bounds one attempt whatever the job asks for: a
	// job's limits.timeout above it is cut to it (default 6h, or
	// JobTimeout when that is longer). A producer cannot hold a board for
	// protocol.MaxJobTimeout (48h) by asking.
	MaxJobTimeout time.Duration
	// MaxLoopCount bounds a job's timed loop plus warmup on this worker's
	// slots: a job asking for more is invalid here (default 100000; the
	// protocol allows up to protocol.MaxLoopCount).
	MaxLoopCount int
	// Backoff is the first redelivery delay after an infrastructure failure;
	// it doubles per attempt up to MaxBackoff (defaults 2s and 1m).
	Backoff, MaxBackoff time.Duration
	// DrainTimeout bounds how long Stop lets running jobs finish before they
	// are stopped and handed back (default 10m).
	DrainTimeout time.Duration
	// IdlePoll is how often an idle slot looks for redelivered jobs; new
	// jobs wake it at once (default 1s).
	IdlePoll time.Duration
	// BuildFaultPause is how long a host fault the worker found itself
	// (its build cache's disk full, its mirror unreadable) keeps the
	// runner's slots out of service before they look again (default 5m).
	BuildFaultPause time.Duration
	// WorkDir holds per-job temporary files (default os.TempDir()).
	WorkDir string
	// Log is the logger (default: disabled).
	Log zerolog.Logger
	// Registry receives the worker's Prometheus metrics (metrics.Worker);
	// nil = no metrics. Handler serves /metrics from it when it is also a
	// prometheus.Gatherer (a *prometheus.Registry is both). Registering
	// two workers on one registry fails in New.
	Registry prometheus.Registerer
	// Notifier is told about quarantined devices and dead letters (nil =
	// nobody). Calls are made off the slot's goroutine.
	Notifier Notifier
}

func (c *Config) fill() error {
	if c.Conn == nil {
		return fmt.Errorf("worker: Config.Conn is required")
	}
	if c.Store == nil {
		return fmt.Errorf("worker: Config.Store is required")
	}
	if len(c.Slots) == 0 {
		return fmt.Errorf("worker: Config.Slots is empty: give --slots or a config with devices")
	}
	if c.ID == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "worker"
		}
		c.ID = h
	}
	if err := protocol.ValidID("worker id", c.ID); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if c.Version == "" {
		c.Version = version.Get().Version
	}
	if c.Revision == "" {
		c.Revision = version.Get().Ref()
	}
	if c.Sink == nil {
		c.Sink = DirectSink{Bucket: c.Store}
	}
	if c.AckWait <= 0 {
		c.AckWait = topology.DefaultAckWait
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 4
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.AckWait / 3
	}
	if c.Heartbeat >= c.AckWait {
		return fmt.Errorf("worker: heartbeat %s must be shorter than ack-wait %s", c.Heartbeat, c.AckWait)
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = 30 * time.Minute
	}
	if c.MaxLoopCount <= 0 {
		c.MaxLoopCount = DefaultMaxLoopCount
	}
	if c.MaxJobTimeout <= 0 {
		c.MaxJobTimeout = max(6*time.Hour, c.JobTimeout)
	}
	if c.MaxJobTimeout < c.JobTimeout {
		return fmt.Errorf("worker: the longest job timeout %s is below the default job timeout %s", c.MaxJobTimeout, c.JobTimeout)
	}
	if c.Backoff <= 0 {
		c.Backoff = 2 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 10 * time.Minute
	}
	if c.IdlePoll <= 0 {
		c.IdlePoll = time.Second
	}
	if c.BuildFaultPause <= 0 {
		c.BuildFaultPause = 5 * time.Minute
	}
	if c.WorkDir == "" {
		c.WorkDir = os.TempDir()
	}
	seen := map[string]bool{}
	for i := range c.Slots {
		s := &c.Slots[i]
		if s.Runner == nil {
			return fmt.Errorf("worker: slot %s has no runner", s.Device.ID)
		}
		if seen[s.Device.ID] {
			return fmt.Errorf("worker: two slots have the id %q", s.Device.ID)
		}
		seen[s.Device.ID] = true
		if !protocol.ValidPool(s.Device.Pool) {
			return fmt.Errorf("worker: slot %s: unknown pool %q", s.Device.ID, s.Device.Pool)
		}
		if s.Health == nil {
			s.Health = device.AlwaysHealthy{}
		}
	}
	return nil
}

// backoff is the redelivery delay after the attempt-th failure.
func (c *Config) backoff(attempt int) time.Duration {
	d := c.Backoff
	for i := 1; i < attempt && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}
