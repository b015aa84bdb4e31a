package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// DeadEntry is one dead letter as `dlq list` shows it (the JSON
// shape: id, pool, reason, attempts, time, payload; and run, priority and
// worker, "" when the dead letter does not know them: a payload that did
// not parse has no run or priority, a job dead-lettered before any worker
// ran it no worker).
type DeadEntry struct {
	ID       string            `json:"id"`
	Run      string            `json:"run"`
	Pool     string            `json:"pool"`
	Priority protocol.Priority `json:"priority"`
	Worker   string            `json:"worker"`
	Reason   string            `json:"reason"`
	Attempts int               `json:"attempts"`
	Time     time.Time         `json:"time"`
	// Trust is "untrusted" for a job claimed from BENCH_UNTRUSTED (absent:
	// BENCH_JOBS), as its worker recorded it.
	Trust protocol.Trust `json:"trust,omitempty"`
	// Payload is the original message: a JSON value when it parsed as
	// JSON, else a string.
	Payload json.RawMessage `json:"payload"`
	// Letter is the whole dead letter; Seq its BENCH_DEAD sequence.
	Letter protocol.DeadLetter `json:"-"`
	Seq    uint64              `json:"-"`
}

// Errors of RetryDead.
var (
	// ErrNoDeadLetter: BENCH_DEAD holds no dead letter with that id.
	ErrNoDeadLetter = errors.New("no such dead letter")
	// ErrDeadJobInvalid: the dead letter's payload is not a valid job of
	// its own id, so it cannot run again as it is.
	ErrDeadJobInvalid = errors.New("the dead-lettered job itself is invalid")
)

// ReadDead reads every dead letter in BENCH_DEAD, oldest first.
func ReadDead(ctx context.Context, js jetstream.JetStream) ([]DeadEntry, error) {
	if _, err := topology.Open(ctx, js); err != nil {
		return nil, err
	}
	out := []DeadEntry{}
	_, err := ReadStored(ctx, js, protocol.StreamDead, nil, func(m jetstream.Msg) {
		var dl protocol.DeadLetter
		if err := json.Unmarshal(m.Data(), &dl); err != nil {
			return
		}
		e := DeadEntry{ID: dl.ID, Run: dl.Run, Pool: dl.Pool, Priority: dl.Priority, Worker: dl.Worker, Reason: dl.Reason,
			Attempts: dl.Attempts, Time: dl.Time, Trust: dl.Trust, Letter: dl, Payload: rawPayload(dl.Payload)}
		if meta, err := m.Metadata(); err == nil {
			e.Seq = meta.Sequence.Stream
		}
		out = append(out, e)
	})
	if err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	return out, nil
}

func rawPayload(p []byte) json.RawMessage {
	if json.Valid(p) {
		return json.RawMessage(p)
	}
	s, _ := json.Marshal(string(p))
	return s
}

// RequeuedJob is a job `dlq retry` re-queued, and the queue it went to.
type RequeuedJob struct {
	*protocol.Job
	Queue protocol.Queue
}

// RetryDead re-queues the newest dead letter with id under a fresh message
// id (the original id stays deduplicated for the window), carrying the
// attempts made so far (protocol.HeaderPriorAttempts: attempt numbers stay
// unique while the job gets a fresh MaxDeliver budget), announces it with
// a queued event and removes the job's dead letters from BENCH_DEAD. The
// job goes back to the stream it came from: BENCH_UNTRUSTED when its
// worker claimed it there (the dead letter's Trust) or its run is an
// untrusted one, else BENCH_JOBS.
func RetryDead(ctx context.Context, js jetstream.JetStream, id string) (*RequeuedJob, error) {
	entries, err := ReadDead(ctx, js)
	if err != nil {
		return nil, err
	}
	var found []DeadEntry
	for _, e := range entries {
		if e.ID == id {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("dlq retry %q: %w", id, ErrNoDeadLetter)
	}
	e := found[len(found)-1]
	job, err := protocol.DecodeJob(e.Letter.Payload)
	if err == nil {
		err = job.CheckID()
	}
	if err != nil {
		return nil, fmt.Errorf("dlq retry %s: %w (%v)", id, ErrDeadJobInvalid, err)
	}
	q := protocol.QueueOf(job.Run, job.Pool, job.Priority)
	if e.Letter.Trust.Untrusted() {
		q.Trust = protocol.TrustUntrusted
	}
	m := nats.NewMsg(q.Subject())
	m.Data = e.Letter.Payload
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-retry-%d", job.ID, time.Now().UnixNano()))
	m.Header.Set(protocol.HeaderPriorAttempts, strconv.Itoa(e.Attempts))
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return nil, fmt.Errorf("dlq retry %s: %w", id, err)
	}
	ev, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: job.Run, Job: job.ID, Time: time.Now().UTC(),
		Kind: protocol.EventQueued, Pool: job.Pool, Message: "re-queued from the dead-letter queue"})
	_, _ = js.Publish(ctx, protocol.EventSubject(job.Run, job.ID), ev)
	if stream, err := js.Stream(ctx, protocol.StreamDead); err == nil {
		for _, f := range found {
			_ = stream.DeleteMsg(ctx, f.Seq)
		}
	}
	return &RequeuedJob{Job: job, Queue: q}, nil
}

// InvalidReasonPrefix begins the reason of every dead letter of a job a
// worker found invalid (bad schema, unknown runner or model, a pool its
// boards do not serve).
const InvalidReasonPrefix = "invalid job:"

// NotRetryable says why the dead letter's job is not worth re-queuing as
// it is ("" when it is): a job dead-lettered as invalid, or whose payload
// is not a valid job of its own id, would fail the same way. Submit a
// corrected job instead.
func (e DeadEntry) NotRetryable() string {
	if strings.HasPrefix(e.Reason, InvalidReasonPrefix) {
		return "an invalid job: re-queued as it is, it would fail the same way; submit a corrected job"
	}
	job, err := protocol.DecodeJob(e.Letter.Payload)
	if err == nil {
		err = job.CheckID()
	}
	if err != nil {
		return "its payload is not a valid job of its id, so it cannot run again as it is"
	}
	return ""
}
