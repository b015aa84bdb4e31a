package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// ErrSquatted is what Submit's error Is when BENCH_JOBS (BENCH_UNTRUSTED
// for an untrusted run) already holds a
// different message under a job's id (its Nats-Msg-Id): someone published
// first under an id they predicted, and the real job would never run.
var ErrSquatted = errors.New("another message holds the job's id")

// checkDuplicate runs on a duplicate publish ack of job j (its message
// data): the stream already has a message with j's id. It reads that
// message (by the ack's sequence) and accepts it only when it is j as this
// Submit publishes it, up to created_at (an earlier Submit of the same run
// within the duplicate window). A message already consumed (work queue)
// cannot be compared and is accepted: its job has been claimed.
func (p *Submitter) checkDuplicate(ctx context.Context, j *protocol.Job, data []byte, ack *jetstream.PubAck) error {
	if ack == nil {
		return nil
	}
	jobs := p.Jobs
	if ack.Stream == protocol.StreamUntrusted {
		jobs = p.Untrusted
	}
	if jobs == nil {
		return nil
	}
	var stored *jetstream.RawStreamMsg
	err := retryFailover(ctx, func(ctx context.Context) error {
		var err error
		stored, err = jobs.GetMsg(ctx, ack.Sequence)
		return err
	}, jetstream.ErrMsgNotFound)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %s: duplicate publish ack: read the stored message %d: %w", j.ID, ack.Sequence, err)
	}
	if bytes.Equal(stored.Data, data) && stored.Header.Get(jetstream.MsgIDHeader) == j.ID {
		return nil
	}
	var other protocol.Job
	if stored.Header.Get(jetstream.MsgIDHeader) == j.ID && json.Unmarshal(stored.Data, &other) == nil {
		other.CreatedAt = j.CreatedAt
		if again, err := json.Marshal(&other); err == nil && bytes.Equal(again, data) {
			return nil
		}
	}
	return fmt.Errorf("job %s: %w (%s sequence %d, subject %s): it was not published by this run's submit; refusing to count the job as queued",
		j.ID, ErrSquatted, ack.Stream, ack.Sequence, stored.Subject)
}
