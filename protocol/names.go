package protocol

import (
	"fmt"
	"strings"
)

// Stream, consumer and bucket names. They are fixed so that producers,
// workers and readers of different versions agree on the topology.
const (
	// StreamJobs is the work-queue stream holding queued jobs.
	StreamJobs = "BENCH_JOBS"
	// StreamUntrusted is the work-queue stream of the untrusted
	// producer's jobs (subjects bench.untrusted.<pool>.<priority>), with
	// limits of its own, so a flood of them cannot refuse a trusted job.
	// Workers claim from it after StreamJobs at the same priority, and
	// mark what they claim from it TrustUntrusted (Queue).
	StreamUntrusted = "BENCH_UNTRUSTED"
	// StreamEvents holds status and progress events, limits retention.
	StreamEvents = "BENCH_EVENTS"
	// StreamDead holds dead-lettered jobs with their reason.
	StreamDead = "BENCH_DEAD"
	// BucketWorkers is the KV bucket of worker heartbeats (one key per worker).
	BucketWorkers = "bench-workers"
	// BucketRuns is the KV bucket of run manifests and cancel flags.
	BucketRuns = "bench-runs"
	// BucketHealth is the KV bucket of Tenstorrent boards' lasting health
	// (quarantine and history), one key per board (HealthKey).
	BucketHealth = "bench-health"

	// SubjectJobsPrefix prefixes job subjects: bench.jobs.<pool>.<priority>.
	SubjectJobsPrefix = "bench.jobs"
	// SubjectUntrustedPrefix prefixes the untrusted producer's job
	// subjects: bench.untrusted.<pool>.<priority> (Queue.Subject).
	SubjectUntrustedPrefix = "bench.untrusted"
	// SubjectEventsPrefix prefixes event subjects: bench.events.<run>.<job>
	// (producers: queued, cancelled) and bench.events.<run>.<job>.worker
	// (workers: WorkerEventSubject).
	SubjectEventsPrefix = "bench.events"
	// SubjectDeadPrefix prefixes dead-letter subjects: bench.dead.<pool>.
	SubjectDeadPrefix = "bench.dead"

	// HeaderPriorAttempts is set by `dlq retry` on a re-queued job: the
	// attempts the job already had before it was dead-lettered. Workers
	// number attempts on from there (so a result's attempt, its events and
	// its artifacts/<run>/<job>/attempt-<n>/ keys stay unique across a
	// retry) while the re-queued message gets a fresh MaxDeliver budget.
	HeaderPriorAttempts = "Benchfleet-Prior-Attempts"
)

// Priority is the queue a job waits in. Workers drain high before normal
// before low.
type Priority string

// The priorities, in the order workers serve them.
const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal"
	PriorityLow    Priority = "low"
)

// Priorities lists every priority, highest first.
var Priorities = []Priority{PriorityHigh, PriorityNormal, PriorityLow}

// Valid reports whether p is one of the known priorities.
func (p Priority) Valid() bool {
	return p == PriorityHigh || p == PriorityNormal || p == PriorityLow
}

// Pools lists every board kind a job can ask for. Tenstorrent pools are
// served by discovered devices; cpu and sim by built-in slots.
var Pools = []string{"n150", "n300", "p100", "p150", "p300", "llmbox", "galaxy", "galaxy-bh", "cpu", "sim"}

// BuiltinPools are the pools served by built-in runners of the same name.
var BuiltinPools = []string{"cpu", "sim"}

// IsBuiltinPool reports whether pool is served by a built-in runner.
func IsBuiltinPool(pool string) bool { return pool == "cpu" || pool == "sim" }

// ValidPool reports whether pool is a known board kind.
func ValidPool(pool string) bool {
	for _, p := range Pools {
		if p == pool {
			return true
		}
	}
	return false
}

// JobSubject is the subject a job for pool at priority is published on.
func JobSubject(pool string, prio Priority) string {
	return fmt.Sprintf("%s.%s.%s", SubjectJobsPrefix, pool, prio)
}

// ParseJobSubject splits a job subject, bench.jobs.<pool>.<priority> or
// bench.untrusted.<pool>.<priority> (ParseQueue says which).
func ParseJobSubject(subject string) (pool string, prio Priority, err error) {
	q, err := ParseQueue(subject)
	return q.Pool, q.Priority, err
}

// ConsumerName is the durable pull consumer shared by every worker of a pool
// at one priority.
func ConsumerName(pool string, prio Priority) string {
	return fmt.Sprintf("jobs-%s-%s", pool, prio)
}

// EventSubject is the subject of events of one job of a run.
func EventSubject(run, job string) string {
	return fmt.Sprintf("%s.%s.%s", SubjectEventsPrefix, run, job)
}

// RunEventsFilter matches every event of a run (its producers' and its
// workers').
func RunEventsFilter(run string) string {
	return fmt.Sprintf("%s.%s.>", SubjectEventsPrefix, run)
}

// WorkerEventToken ends the subject of an event published by a worker:
// bench.events.<run>.<job>.worker. Producers may publish only on
// EventSubject (four tokens; deploy/nats/accounts.conf denies them the
// fifth), so an event on a worker subject comes from a worker.
const WorkerEventToken = "worker"

// WorkerEventSubject is the subject a worker publishes one job's events on.
func WorkerEventSubject(run, job string) string {
	return EventSubject(run, job) + "." + WorkerEventToken
}

// JobEventsFilters match every event of one job of a run: the producers'
// (EventSubject) and the workers' (WorkerEventSubject).
func JobEventsFilters(run, job string) []string {
	return []string{EventSubject(run, job), WorkerEventSubject(run, job)}
}

// IsWorkerEventSubject reports whether subject is a WorkerEventSubject.
func IsWorkerEventSubject(subject string) bool {
	parts := strings.Split(subject, ".")
	return len(parts) == 5 && parts[0]+"."+parts[1] == SubjectEventsPrefix && parts[4] == WorkerEventToken
}

// ProducerEventKind reports whether a producer may publish events of kind
// k: queued (submit, dlq retry) and cancelled (runs cancel, for jobs taken
// out of the queue). Every other kind is a worker's and counts only on a
// WorkerEventSubject.
func ProducerEventKind(k EventKind) bool { return k == EventQueued || k == EventCancelled }

// TrustedEvent reports whether an event of kind k read from subject may be
// believed: a worker's kind only on a worker's subject.
func TrustedEvent(subject string, k EventKind) bool {
	return ProducerEventKind(k) || IsWorkerEventSubject(subject)
}

// DeadSubject is the dead-letter subject of a pool. An unparseable pool is
// recorded under "unknown".
func DeadSubject(pool string) string {
	if !subjectToken(pool) {
		pool = "unknown"
	}
	return fmt.Sprintf("%s.%s", SubjectDeadPrefix, pool)
}

// OwnerUntrusted is the producer identity of fork pull requests
// (deploy/nats/accounts.conf user `untrusted`). Its runs are named
// UntrustedRunPrefix + "<rest>" and their bench-runs keys live under
// "untrusted." (RunKeyBase), the only keys that user may write.
const OwnerUntrusted = "untrusted"

// UntrustedRunPrefix starts the name of every run of the untrusted
// producer.
const UntrustedRunPrefix = OwnerUntrusted + "-"

// UntrustedRun reports whether run belongs to the untrusted producer: its
// name is "untrusted" or starts with UntrustedRunPrefix.
func UntrustedRun(run string) bool {
	return run == OwnerUntrusted || strings.HasPrefix(run, UntrustedRunPrefix)
}

// RunKeyBase is the prefix of a run's bench-runs keys: the run itself, or
// "untrusted.<run>" for an UntrustedRun, so that permissions (which match
// whole subject tokens) can give the untrusted producer
// $KV.bench-runs.untrusted.> and nothing of any other run.
func RunKeyBase(run string) string {
	if UntrustedRun(run) {
		return OwnerUntrusted + "." + run
	}
	return run
}

// CancelKey is the bench-runs key holding a run's cancel flag.
func CancelKey(run string) string { return RunKeyBase(run) + ".cancel" }

// ManifestKey is the bench-runs key holding a run's manifest (for a big
// run, its header: the jobs are in ManifestChunkKey values).
func ManifestKey(run string) string { return RunKeyBase(run) + ".manifest" }

// ManifestChunkKey is the bench-runs key holding chunk i (from 0) of a big
// run's manifest jobs (RunManifest.Chunks).
func ManifestChunkKey(run string, i int) string { return fmt.Sprintf("%s.jobs.%d", RunKeyBase(run), i) }

// CancelKeyFilters match every cancel flag in bench-runs (for a watch).
// The slice is new on every call (nats.go's WatchFiltered rewrites it).
func CancelKeyFilters() []string { return []string{"*.cancel", OwnerUntrusted + ".*.cancel"} }

// ParseRunKey splits a bench-runs key into its run and what it holds
// ("cancel", "manifest" or "jobs.<i>"); ok is false for any other key,
// and for an "untrusted." key whose run is not an UntrustedRun.
func ParseRunKey(key string) (run, what string, ok bool) {
	parts := strings.Split(key, ".")
	if len(parts) > 1 && parts[0] == OwnerUntrusted {
		parts = parts[1:]
		if !UntrustedRun(parts[0]) {
			return "", "", false
		}
	} else if UntrustedRun(parts[0]) {
		return "", "", false
	}
	switch {
	case len(parts) == 2 && (parts[1] == "cancel" || parts[1] == "manifest"):
		return parts[0], parts[1], true
	case len(parts) == 3 && parts[1] == "jobs":
		return parts[0], parts[1] + "." + parts[2], true
	}
	return "", "", false
}

// ManifestChunkJobs is how many jobs one manifest value holds at most:
// ManifestJob is under 500 bytes (its strings are bounded), so a chunk
// stays well under a default nats-server's 1 MB max payload.
const ManifestChunkJobs = 1000

// MaxMatrixCells bounds the cells a matrix multiplies out to (before
// exclusions), so a typo cannot make submit build hundreds of millions of
// jobs in memory.
const MaxMatrixCells = 50_000

// subjectToken reports whether s can stand as one token of a subject.
func subjectToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}
