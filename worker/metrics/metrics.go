// Package metrics is a worker's Prometheus metrics: the families a worker
// registers on its registry (Worker: jobs, phases, claims, devices, the
// queue, the store and JetStream as the worker sees them, the build it
// runs) and its build cache's (BuildCache). A nil *Worker or *BuildCache
// records nothing. docs/OPERATIONS.md lists the families with their
// meaning.
package metrics

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchfleet/benchfleet/protocol"
)

// QueueDepthInterval is how often a worker with metrics reads the queue
// depth of its pools' consumers (one consumer info request per pool and
// priority).
const QueueDepthInterval = 5 * time.Second

// Worker is a worker's Prometheus metrics, registered on the registry its
// config gives (worker.Config.Registry). A nil *Worker records nothing, so
// a worker without a registry pays nothing.
//
// Families (docs/OPERATIONS.md lists them with their meaning):
//
//	benchfleet_jobs_total{pool,status}                 counter
//	benchfleet_job_retries_total{pool}                 counter
//	benchfleet_dead_letters_total{pool}                counter
//	benchfleet_job_phase_seconds{phase}                histogram
//	benchfleet_claim_latency_seconds                   histogram
//	benchfleet_devices{pool,state}                     gauge
//	benchfleet_spool_entries                           gauge
//	benchfleet_storage_errors_total{op}                counter
//	benchfleet_heartbeat_failures_total{kind}          counter
//	benchfleet_queue_depth{pool,priority}              gauge
//	benchfleet_queue_in_flight{pool,priority}          gauge
//	benchfleet_nats_connected                          gauge
//	benchfleet_build_info{version,revision,goversion}  gauge (always 1)
//	benchfleet_jetstream_available                     gauge
//	benchfleet_store_available                         gauge
//	benchfleet_build_setups_total{result}              counter (BuildCache)
//	benchfleet_build_cache_bytes                       gauge   (BuildCache)
type Worker struct {
	jobs       *prometheus.CounterVec
	retries    *prometheus.CounterVec
	dead       *prometheus.CounterVec
	phases     *prometheus.HistogramVec
	claim      prometheus.Histogram
	storageErr *prometheus.CounterVec
	hbFail     *prometheus.CounterVec
	queue      *prometheus.GaugeVec
	inFlight   *prometheus.GaugeVec
}

// Storage operations counted by benchfleet_storage_errors_total.
const (
	// StorageOpExists: the check for an earlier attempt's result failed.
	StorageOpExists = "exists"
	// StorageOpDeliver: the result could not be made durable (neither in
	// the store nor in the spool); the job was handed back.
	StorageOpDeliver = "deliver"
	// StorageOpSpooled: the store refused the result and the spool took it.
	StorageOpSpooled = "spooled"
)

// Heartbeat kinds counted by benchfleet_heartbeat_failures_total.
const (
	// HeartbeatInProgress: an InProgress (claim keep-alive) was not sent.
	HeartbeatInProgress = "in_progress"
	// HeartbeatStatus: the worker status was not written to bench-workers.
	HeartbeatStatus = "status"
)

// phaseBuckets cover a sim job's milliseconds to a harness compile's tens
// of minutes.
var phaseBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// claimBuckets cover an idle fleet's milliseconds to a night's queue.
var claimBuckets = []float64{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600}

// State is what the gauges read at each scrape: the worker's devices, its
// spool and its connections.
type State interface {
	// Devices are the worker's devices as its heartbeat reports them.
	Devices() []protocol.DeviceStatus
	// SpoolEntries is the results waiting in the spool (0 without one).
	SpoolEntries() int
	// NATSConnected reports whether the NATS connection is up.
	NATSConnected() bool
	// JetStreamAnswers reports whether JetStream answers the worker's
	// fetches and heartbeats.
	JetStreamAnswers() bool
	// StoreAnswers reports whether the result store answers.
	StoreAnswers() bool
}

// NewWorker creates a worker's metrics and registers them (and the
// collector of st: device states, spool entries, the NATS connection,
// JetStream and the store) on reg, with the series of each of pools (the
// pools of the worker's slots) and benchfleet_build_info of version and
// revision. reg nil: no metrics, a nil *Worker.
func NewWorker(reg prometheus.Registerer, st State, pools []string, version, revision string) (*Worker, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Worker{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_jobs_total",
			Help: "Jobs whose result this worker recorded, by pool and result status (passed, failed, error, timeout, cancelled)."},
			[]string{"pool", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_job_retries_total",
			Help: "Attempts handed back for redelivery after an infrastructure failure, by pool."}, []string{"pool"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_dead_letters_total",
			Help: "Jobs this worker dead-lettered (invalid, or out of deliveries), by pool."}, []string{"pool"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "benchfleet_job_phase_seconds",
			Help: "Duration of each phase of a recorded job (setup, compile, warmup, timing, pcc, upload).", Buckets: phaseBuckets},
			[]string{"phase"}),
		claim: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "benchfleet_claim_latency_seconds",
			Help:    "From a job's publication to the stream to its first attempt starting on a slot.",
			Buckets: claimBuckets}),
		storageErr: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_storage_errors_total",
			Help: "Store failures seen by the worker, by operation (exists, deliver, spooled)."}, []string{"op"}),
		hbFail: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "benchfleet_heartbeat_failures_total",
			Help: "Heartbeats not sent, by kind (in_progress: the claim keep-alive; status: bench-workers)."}, []string{"kind"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "benchfleet_queue_depth",
			Help: "Jobs queued and not yet delivered, per pool and priority (consumer NumPending, BENCH_JOBS and BENCH_UNTRUSTED together), refreshed every 5s. Every worker of a pool reports the same consumers: aggregate with max."},
			[]string{"pool", "priority"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "benchfleet_queue_in_flight",
			Help: "Jobs delivered and not yet acknowledged, per pool and priority (consumer NumAckPending), refreshed every 5s."},
			[]string{"pool", "priority"}),
	}
	for _, c := range []prometheus.Collector{m.jobs, m.retries, m.dead, m.phases, m.claim, m.storageErr, m.hbFail, m.queue, m.inFlight, stateCollector{st}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(buildInfo(version, revision)); err != nil {
		return nil, err
	}
	// Zero series, so dashboards and rate() see them before the first event.
	for _, pool := range pools {
		for _, st := range []protocol.Status{protocol.StatusPassed, protocol.StatusFailed, protocol.StatusError, protocol.StatusTimeout, protocol.StatusCancelled} {
			m.jobs.WithLabelValues(pool, string(st))
		}
		m.retries.WithLabelValues(pool)
		m.dead.WithLabelValues(pool)
	}
	for _, op := range []string{StorageOpExists, StorageOpDeliver, StorageOpSpooled} {
		m.storageErr.WithLabelValues(op)
	}
	for _, k := range []string{HeartbeatInProgress, HeartbeatStatus} {
		m.hbFail.WithLabelValues(k)
	}
	return m, nil
}

// Recorded counts a result that was made durable (spooled: in the spool,
// not the store) and observes its phases.
func (m *Worker) Recorded(r *protocol.Result, spooled bool) {
	if m == nil {
		return
	}
	m.jobs.WithLabelValues(r.Pool, string(r.Status)).Inc()
	for _, p := range []struct {
		name string
		v    float64
	}{{"setup", r.Phases.SetupS}, {"compile", r.Phases.CompileS}, {"warmup", r.Phases.WarmupS}, {"timing", r.Phases.TimingS}, {"pcc", r.Phases.PCCS}, {"upload", r.Phases.UploadS}} {
		if p.v > 0 {
			m.phases.WithLabelValues(p.name).Observe(p.v)
		}
	}
	if spooled {
		m.storageErr.WithLabelValues(StorageOpSpooled).Inc()
	}
}

// Claimed observes the claim latency of a job's first delivery (a
// redelivery's age includes the earlier attempts, so it is not counted;
// prior is the attempts made before the message's deliveries).
func (m *Worker) Claimed(msg jetstream.Msg, prior int) {
	if m == nil || prior > 0 {
		return
	}
	meta, err := msg.Metadata()
	if err != nil || meta.NumDelivered != 1 || meta.Timestamp.IsZero() {
		return
	}
	m.claim.Observe(max(0, time.Since(meta.Timestamp).Seconds()))
}

// Retried counts an attempt handed back for redelivery after an
// infrastructure failure.
func (m *Worker) Retried(pool string) {
	if m != nil {
		m.retries.WithLabelValues(pool).Inc()
	}
}

// DeadLettered counts a job this worker dead-lettered.
func (m *Worker) DeadLettered(pool string) {
	if m != nil {
		m.dead.WithLabelValues(pool).Inc()
	}
}

// StorageError counts a store failure of op (StorageOpExists, ...).
func (m *Worker) StorageError(op string) {
	if m != nil {
		m.storageErr.WithLabelValues(op).Inc()
	}
}

// HeartbeatFailed counts a heartbeat of kind (HeartbeatInProgress,
// HeartbeatStatus) not sent.
func (m *Worker) HeartbeatFailed(kind string) {
	if m != nil {
		m.hbFail.WithLabelValues(kind).Inc()
	}
}

// QueueDepthLoop refreshes benchfleet_queue_depth and _in_flight from the
// consumers of the worker's pools (each pool's in protocol.PoolQueues
// order) every QueueDepthInterval until ctx ends or stop is closed (every
// slot ended).
func (m *Worker) QueueDepthLoop(ctx context.Context, stop <-chan struct{}, pools map[string][]jetstream.Consumer) {
	if m == nil {
		return
	}
	t := time.NewTicker(QueueDepthInterval)
	defer t.Stop()
	for {
		for pool, cs := range pools {
			// A priority's depth counts its trusted and untrusted queues.
			type depth struct {
				pending, inFlight uint64
				ok                bool
			}
			by := map[protocol.Priority]*depth{}
			for i, q := range protocol.PoolQueues(pool) {
				if i >= len(cs) {
					break
				}
				d := by[q.Priority]
				if d == nil {
					d = &depth{ok: true}
					by[q.Priority] = d
				}
				ictx, cancel := context.WithTimeout(ctx, 3*time.Second)
				info, err := cs[i].Info(ictx)
				cancel()
				if err != nil {
					d.ok = false // stale values stay; NATS may be away
					continue
				}
				d.pending += info.NumPending
				d.inFlight += uint64(info.NumAckPending)
			}
			for prio, d := range by {
				if d.ok {
					m.queue.WithLabelValues(pool, string(prio)).Set(float64(d.pending))
					m.inFlight.WithLabelValues(pool, string(prio)).Set(float64(d.inFlight))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// stateCollector reports the gauges read at scrape time: devices per pool
// and state, spool entries, the NATS connection, whether JetStream and the
// store answer.
type stateCollector struct{ st State }

var (
	devicesDesc = prometheus.NewDesc("benchfleet_devices",
		"Devices of this worker by pool and state (idle, busy, quarantined).", []string{"pool", "state"}, nil)
	spoolDesc = prometheus.NewDesc("benchfleet_spool_entries",
		"Results waiting in the local spool for the store (0 without a spool).", nil, nil)
	connectedDesc = prometheus.NewDesc("benchfleet_nats_connected",
		"1 while the worker's NATS connection is up, else 0.", nil, nil)
	jetStreamDesc = prometheus.NewDesc("benchfleet_jetstream_available",
		"1 while JetStream answers the worker (its fetches and heartbeats), else 0: the connection is down, or the cluster has lost its quorum.", nil, nil)
	storeDesc = prometheus.NewDesc("benchfleet_store_available",
		"1 while the result store answers the worker, else 0 (results go to the spool, if there is one; jobs whose wheels it does not serve go back to the queue).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- devicesDesc
	ch <- spoolDesc
	ch <- connectedDesc
	ch <- jetStreamDesc
	ch <- storeDesc
}

// Collect implements prometheus.Collector.
func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]int{}
	for _, d := range c.st.Devices() {
		for _, st := range []string{protocol.DeviceIdle, protocol.DeviceBusy, protocol.DeviceQuarantined} {
			counts[[2]string{d.Pool, st}] += 0
		}
		counts[[2]string{d.Pool, d.State}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(devicesDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(spoolDesc, prometheus.GaugeValue, float64(c.st.SpoolEntries()))
	connected := c.st.NATSConnected()
	ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, boolGauge(connected))
	ch <- prometheus.MustNewConstMetric(jetStreamDesc, prometheus.GaugeValue, boolGauge(connected && c.st.JetStreamAnswers()))
	ch <- prometheus.MustNewConstMetric(storeDesc, prometheus.GaugeValue, boolGauge(c.st.StoreAnswers()))
}

// boolGauge is 1 for true, 0 for false.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
