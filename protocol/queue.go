package protocol

import (
	"fmt"
	"strings"
)

// Trust says whose jobs a result, a dead letter or a queue is of. A
// worker sets it from the stream it claimed the job from, never from the
// job's payload: the untrusted producer (deploy/nats/accounts.conf user
// `untrusted`) may publish only on StreamUntrusted's subjects, so a job
// claimed from there is untrusted whatever run or branch it names.
type Trust string

// The trust levels. The empty value is trusted, so documents written
// before the field existed read as trusted.
const (
	TrustTrusted   Trust = ""
	TrustUntrusted Trust = "untrusted"
)

// Valid reports whether t is a known trust level.
func (t Trust) Valid() bool { return t == TrustTrusted || t == TrustUntrusted }

// Untrusted reports whether t is not trusted: TrustUntrusted, or any
// value this version does not know (never taken for trusted).
func (t Trust) Untrusted() bool { return t != TrustTrusted }

// RunTrust is the trust of the queue a run's jobs are published to: an
// UntrustedRun's go to StreamUntrusted (its producer may publish nowhere
// else), every other run's to StreamJobs.
func RunTrust(run string) Trust {
	if UntrustedRun(run) {
		return TrustUntrusted
	}
	return TrustTrusted
}

// UntrustedPriorities are the priorities of StreamUntrusted, highest
// first: the untrusted producer may not submit at high priority.
var UntrustedPriorities = []Priority{PriorityNormal, PriorityLow}

// Queue is where a job waits: one pool and priority of the trusted
// StreamJobs or of the untrusted producer's StreamUntrusted. Each queue
// has one subject and one durable pull consumer, shared by every worker
// of the pool.
type Queue struct {
	Trust    Trust
	Pool     string
	Priority Priority
}

// QueueOf is the queue a job of run for pool at prio is published to.
func QueueOf(run, pool string, prio Priority) Queue {
	return Queue{Trust: RunTrust(run), Pool: pool, Priority: prio}
}

// Stream is the queue's stream: StreamJobs or StreamUntrusted.
func (q Queue) Stream() string {
	if q.Trust.Untrusted() {
		return StreamUntrusted
	}
	return StreamJobs
}

// Subject is the queue's subject: bench.jobs.<pool>.<priority> or
// bench.untrusted.<pool>.<priority>.
func (q Queue) Subject() string {
	if q.Trust.Untrusted() {
		return fmt.Sprintf("%s.%s.%s", SubjectUntrustedPrefix, q.Pool, q.Priority)
	}
	return JobSubject(q.Pool, q.Priority)
}

// Consumer is the queue's durable pull consumer: jobs-<pool>-<priority>
// (ConsumerName) or untrusted-<pool>-<priority>.
func (q Queue) Consumer() string {
	if q.Trust.Untrusted() {
		return fmt.Sprintf("%s-%s-%s", OwnerUntrusted, q.Pool, q.Priority)
	}
	return ConsumerName(q.Pool, q.Priority)
}

// String names the queue for messages, e.g. "BENCH_JOBS sim/normal".
func (q Queue) String() string { return q.Stream() + " " + q.Pool + "/" + string(q.Priority) }

// PoolQueues lists a pool's queues in the order a worker's slot serves
// them: strict priority, and within one priority the trusted queue before
// the untrusted one (high, normal, untrusted normal, low, untrusted low).
func PoolQueues(pool string) []Queue {
	var out []Queue
	for _, prio := range Priorities {
		out = append(out, Queue{Pool: pool, Priority: prio})
		for _, up := range UntrustedPriorities {
			if up == prio {
				out = append(out, Queue{Trust: TrustUntrusted, Pool: pool, Priority: prio})
			}
		}
	}
	return out
}

// AllQueues lists the queues of every pool (PoolQueues of each of Pools).
func AllQueues() []Queue {
	var out []Queue
	for _, pool := range Pools {
		out = append(out, PoolQueues(pool)...)
	}
	return out
}

// ParseQueue splits a job subject, bench.jobs.<pool>.<priority> or
// bench.untrusted.<pool>.<priority>, into its queue.
func ParseQueue(subject string) (Queue, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 4 {
		return Queue{}, fmt.Errorf("protocol: %q is not a job subject", subject)
	}
	switch parts[0] + "." + parts[1] {
	case SubjectJobsPrefix:
		return Queue{Pool: parts[2], Priority: Priority(parts[3])}, nil
	case SubjectUntrustedPrefix:
		return Queue{Trust: TrustUntrusted, Pool: parts[2], Priority: Priority(parts[3])}, nil
	}
	return Queue{}, fmt.Errorf("protocol: %q is not a job subject", subject)
}
