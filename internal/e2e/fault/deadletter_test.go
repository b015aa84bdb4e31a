//go:build unix

package fault

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

// A job runs out of deliveries while BENCH_DEAD cannot take its dead
// letter (the stream is gone, as during an election with no leader). The
// job must not be terminated with neither a result nor a dead letter: the
// worker hands it back, and once BENCH_DEAD is back the job is
// dead-lettered.
func TestDeadLetterNotStoredJobHandedBack(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 3 * time.Second}
	fb, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nc, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	fleettest.StartWorker(t, worker.Config{
		ID: "w", Conn: nc, Store: fb, Slots: fleettest.SimSlots("w", 1), AckWait: tc.AckWait, MaxDeliver: 1,
		Backoff: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop(),
	})
	// Worker.Start ensured the topology; take BENCH_DEAD away now.
	if err := js.DeleteStream(t.Context(), protocol.StreamDead); err != nil {
		t.Fatal(err)
	}
	const run = "dead-unstored"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.fail": "transient", "sim.duration": "10ms"})
	fleettest.Submit(t, js, topo, fb, run, protocol.PriorityNormal, jobs)

	// The worker tries, fails to dead-letter, and must keep the job queued.
	cons, err := js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "two deliveries without a dead letter", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ci, err := cons.Info(ctx)
		return err == nil && ci.Delivered.Consumer >= 2
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	si, err := topo.Jobs.Info(ctx)
	cancel()
	if err != nil || si.State.Msgs != 1 {
		t.Fatalf("BENCH_JOBS holds %v jobs (%v), want the job still queued", si.State.Msgs, err)
	}

	// BENCH_DEAD returns; the next delivery dead-letters the job.
	fleettest.Topology(t, js, tc)
	var dl protocol.DeadLetter
	fleettest.Eventually(t, 30*time.Second, "the job's dead letter", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := js.Stream(ctx, protocol.StreamDead)
		if err != nil {
			return false
		}
		raw, err := m.GetLastMsgForSubject(ctx, protocol.DeadSubject("sim"))
		return err == nil && json.Unmarshal(raw.Data, &dl) == nil
	})
	if dl.ID != jobs[0].ID || dl.Run != run {
		t.Fatalf("dead letter for %s/%s, want %s/%s", dl.Run, dl.ID, run, jobs[0].ID)
	}
	fleettest.Eventually(t, 30*time.Second, "the job to leave BENCH_JOBS", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		si, err := topo.Jobs.Info(ctx)
		return err == nil && si.State.Msgs == 0
	})
	t.Logf("dead-lettered after %d attempts: %s", dl.Attempts, dl.Reason)
}
