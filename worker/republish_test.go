package worker_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// created_at is not in a job's content id, so a
// producer can republish a finished job with another created_at (and
// another message id). The worker finds the job's result under its first
// date and does not run it again: one result, one passed event, and the
// first run's artifacts stay as recorded.
func TestRepublishedJobWithOtherCreatedAtDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	tc := topology.Config{AckWait: 10 * time.Second}
	topo := fleettest.Topology(t, js, tc)
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fleettest.StartWorker(t, worker.Config{ID: "republish", Conn: nc, Store: store, Slots: fleettest.SimSlots("sim", 1),
		AckWait: tc.AckWait, IdlePoll: 50 * time.Millisecond, Log: zerolog.Nop()})
	const run = "republish"
	jobs := fleettest.SimJobs(t, run, 1, nil)
	fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, jobs)
	var first *protocol.Result
	fleettest.Eventually(t, 30*time.Second, "the job's result", func() bool {
		first = fleettest.Results(t, store, run)[jobs[0].ID]
		return first != nil
	})
	arts := map[string]string{}
	for _, a := range first.Artifacts {
		arts[a.Key] = a.SHA256
	}

	again := *jobs[0]
	again.CreatedAt = first.RunCreatedAt.Add(49 * time.Hour)
	data, err := json.Marshal(&again)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(t.Context(), protocol.JobSubject(again.Pool, again.Priority), data, jetstream.WithMsgID(again.ID+"-again")); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName(again.Pool, again.Priority))
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 30*time.Second, "the republished job settled", func() bool {
		info, err := cons.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Consumer >= 2
	})

	var results []string
	for k, err := range store.List(t.Context(), storage.PrefixResults) {
		if err != nil {
			t.Fatal(err)
		}
		if _, r, _, ok := storage.ResultKeyParts(k); ok && r == run {
			results = append(results, k)
		}
	}
	if len(results) != 1 {
		t.Errorf("results of the job: %v, want one", results)
	}
	passed := 0
	if _, err := fleet.ReadStored(t.Context(), js, protocol.StreamEvents, []string{protocol.RunEventsFilter(run)}, func(m jetstream.Msg) {
		var ev protocol.Event
		if json.Unmarshal(m.Data(), &ev) == nil && ev.Kind == protocol.EventPassed {
			passed++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if passed != 1 {
		t.Errorf("%d passed events, want 1 (the republished job ran again)", passed)
	}
	for key, sum := range arts {
		rc, err := store.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, _ = io.Copy(h, rc)
		rc.Close()
		if hex.EncodeToString(h.Sum(nil)) != sum {
			t.Errorf("artifact %s changed after the republish", key)
		}
	}
}
