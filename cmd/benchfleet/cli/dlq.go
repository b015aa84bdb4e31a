package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

// dlqEntry is the JSON shape of `dlq list` (DESIGN §7).
type dlqEntry struct {
	ID       string    `json:"id"`
	Pool     string    `json:"pool"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Time     time.Time `json:"time"`
	// Payload is the original message: a JSON value when it parsed as
	// JSON, else a string.
	Payload json.RawMessage `json:"payload"`
	seq     uint64
	dl      protocol.DeadLetter
}

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "List and re-queue dead-lettered jobs"}
	var format string
	list := &cobra.Command{
		Use: "list", Short: "List dead letters with their reason", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			nc, js, err := a.connect(ctx, "benchfleet-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			entries, err := readDead(ctx, js)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(a.stdout, entries)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRUN\tPOOL\tATTEMPTS\tTIME\tREASON")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.ID, e.dl.Run, e.Pool, e.Attempts, e.Time.Format(time.RFC3339), producer.Shorten(e.Reason, 100))
			}
			tw.Flush()
			fmt.Fprintf(a.stdout, "(%s)\n", count(len(entries), "dead letter"))
			return nil
		},
	}
	list.Flags().StringVar(&format, "format", "table", "table or json")
	retry := &cobra.Command{
		Use: "retry ID", Short: "Re-queue a dead-lettered job under a fresh message id", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			nc, js, err := a.connect(ctx, "benchfleet-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			job, err := retryDead(ctx, js, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "job %s of run %s re-queued on %s\n", job.ID, job.Run, protocol.JobSubject(job.Pool, job.Priority))
			return nil
		},
	}
	cmd.AddCommand(list, retry)
	return cmd
}

// readDead reads every message of BENCH_DEAD, oldest first.
func readDead(ctx context.Context, js jetstream.JetStream) ([]dlqEntry, error) {
	if _, err := topology.Open(ctx, js); err != nil {
		return nil, err
	}
	out := []dlqEntry{}
	_, err := producer.ReadStored(ctx, js, protocol.StreamDead, nil, func(m jetstream.Msg) {
		var dl protocol.DeadLetter
		if err := json.Unmarshal(m.Data(), &dl); err != nil {
			return
		}
		e := dlqEntry{ID: dl.ID, Pool: dl.Pool, Reason: dl.Reason, Attempts: dl.Attempts, Time: dl.Time, dl: dl, Payload: rawPayload(dl.Payload)}
		if meta, err := m.Metadata(); err == nil {
			e.seq = meta.Sequence.Stream
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

// retryDead re-queues the newest dead letter with id under a fresh message
// id (the original id stays deduplicated for the window) and removes it
// from BENCH_DEAD.
func retryDead(ctx context.Context, js jetstream.JetStream, id string) (*protocol.Job, error) {
	entries, err := readDead(ctx, js)
	if err != nil {
		return nil, err
	}
	var found []dlqEntry
	for _, e := range entries {
		if e.ID == id {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return nil, usageErr("no dead letter with id %q (see benchfleet dlq list)", id)
	}
	e := found[len(found)-1]
	job, err := protocol.DecodeJob(e.dl.Payload)
	if err == nil {
		err = job.CheckID()
	}
	if err != nil {
		return nil, usageErr("dead letter %s cannot be re-queued: the job itself is invalid (%v)", id, err)
	}
	m := nats.NewMsg(protocol.JobSubject(job.Pool, job.Priority))
	m.Data = e.dl.Payload
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-retry-%d", job.ID, time.Now().UnixNano()))
	// Attempts go on from the dead letter's count (a fresh MaxDeliver budget).
	m.Header.Set(protocol.HeaderPriorAttempts, strconv.Itoa(e.Attempts))
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return nil, fmt.Errorf("dlq retry %s: %w", id, err)
	}
	ev, _ := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: job.Run, Job: job.ID, Time: time.Now().UTC(),
		Kind: protocol.EventQueued, Pool: job.Pool, Message: "re-queued from the dead-letter queue"})
	_, _ = js.Publish(ctx, protocol.EventSubject(job.Run, job.ID), ev)
	stream, err := js.Stream(ctx, protocol.StreamDead)
	if err == nil {
		for _, f := range found {
			_ = stream.DeleteMsg(ctx, f.seq)
		}
	}
	return job, nil
}
