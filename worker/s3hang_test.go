package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/s3"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker"
)

// s3Bucket opens the S3 store of srv under prefix with static credentials
// (the test stays parallel) and the backend's default call timeout (60 s),
// as a worker opens it.
func s3Bucket(t *testing.T, srv *s3test.Server, prefix string) *s3.Bucket {
	t.Helper()
	b, err := s3.NewBucket(t.Context(), s3.Config{Bucket: srv.Bucket, Prefix: prefix, Endpoint: srv.Endpoint,
		Region: s3test.Region, PathStyle: true, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// runSpool runs sp's uploader until the test ends.
func runSpool(t *testing.T, sp *spool.Spool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sp.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// healthz reads w's /healthz.
func healthz(t *testing.T, w *worker.Worker) (int, string) {
	t.Helper()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// workerRecord reads w's record in bench-workers.
func workerRecord(t *testing.T, topo *topology.Handles, id string) protocol.WorkerStatus {
	t.Helper()
	var st protocol.WorkerStatus
	e, err := topo.Workers.Get(t.Context(), id)
	if err != nil {
		return st
	}
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A store that hangs — VersityGW frozen with SIGSTOP for 60 s: it accepts
// connections and answers nothing — while 3 jobs of a few seconds run on 3
// workers with ack-wait 10 s. Each job is claimed and run once (its claim
// is kept alive from its first moment, and no store call waits more than
// a few seconds), its result goes to its worker's spool and the job is
// acked; every worker says "store not answering" (status, /healthz, its
// bench-workers record); no job is dead-lettered; after SIGCONT each job
// has exactly one passed result, from the spool.
func TestHungStoreRunsEachJobOnceAndSpools(t *testing.T) {
	t.Parallel()
	testHungStore(t, 60*time.Second)
}

func testHungStore(t *testing.T, freeze time.Duration) {
	gw := s3test.Start(t)
	bucket := s3Bucket(t, gw, "farm")
	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)

	const nWorkers = 3
	var workers []*worker.Worker
	var spools []*spool.Spool
	for i := range nWorkers {
		sp, err := spool.NewWithConfig(spool.Config{Dir: t.TempDir(), Bucket: bucket,
			RetryMin: 100 * time.Millisecond, RetryMax: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		runSpool(t, sp)
		spools = append(spools, sp)
		nc, _ := fleettest.Connect(t, srv.ClientURL())
		id := "hang-w" + string(rune('0'+i))
		workers = append(workers, fleettest.StartWorker(t, worker.Config{ID: id, Conn: nc, Store: bucket, Sink: sp,
			Slots: fleettest.SimSlots(id, 1), AckWait: tc.AckWait, Backoff: 50 * time.Millisecond, IdlePoll: 100 * time.Millisecond,
			Log: zerolog.Nop()}))
	}

	gw.Freeze()
	frozen := time.Now()
	t.Cleanup(gw.Thaw) // before its Stop: cleanups run last first
	const run = "store-hang"
	jobs := fleettest.SimJobs(t, run, nWorkers, map[string]string{"sim.duration": "3s"})
	fleettest.Submit(t, js, topo, nil, run, protocol.PriorityNormal, jobs)

	pending := func() int {
		n := 0
		for _, sp := range spools {
			n += sp.Pending()
		}
		return n
	}
	fleettest.Eventually(t, freeze-5*time.Second, "every result in a spool while the store hangs", func() bool {
		return pending() == nWorkers
	})
	fleettest.Eventually(t, 10*time.Second, "every job acked", func() bool {
		c, err := js.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	for _, w := range workers {
		if st := w.Status(); !strings.Contains(st.Store, "store not answering") {
			t.Errorf("worker %s status: store %q, want it to say the store is not answering", w.ID(), st.Store)
		}
		if code, body := healthz(t, w); code != http.StatusOK || !strings.Contains(body, "store not answering") {
			t.Errorf("worker %s /healthz: %d %q, want 200 saying the store is not answering (the spool takes the results)", w.ID(), code, body)
		}
		fleettest.Eventually(t, 15*time.Second, "the bench-workers record to say the store is not answering", func() bool {
			return strings.Contains(workerRecord(t, topo, w.ID()).Store, "store not answering")
		})
	}

	// The store stays frozen for the whole freeze: no job is claimed
	// again meanwhile (its ack wait passes several times over).
	time.Sleep(time.Until(frozen.Add(freeze)))
	gw.Thaw()

	fleettest.Eventually(t, 90*time.Second, "every result in the bucket and the spools drained", func() bool {
		rs, _, err := index.QueryJSON(context.Background(), bucket, index.Filter{Run: run})
		return err == nil && len(rs) == nWorkers && pending() == 0
	})
	results := fleettest.Results(t, bucket, run)
	evs := runEvents(t, js, run)
	for _, j := range jobs {
		r := results[j.ID]
		if r == nil || r.Status != protocol.StatusPassed || r.Attempt != 1 {
			t.Errorf("job %s: result %+v, want one passed result of attempt 1", j.ID, r)
		}
		if n := len(eventsOf(evs, j.ID, protocol.EventClaimed)); n != 1 {
			t.Errorf("job %s was claimed and run %d times, want once", j.ID, n)
		}
		for _, kind := range []protocol.EventKind{protocol.EventDead, protocol.EventRetrying} {
			if es := eventsOf(evs, j.ID, kind); len(es) > 0 {
				t.Errorf("job %s: %d %s events (first: %s), want none", j.ID, len(es), kind, es[0].Message)
			}
		}
		passed := eventsOf(evs, j.ID, protocol.EventPassed)
		if len(passed) != 1 || !strings.Contains(passed[0].Message, "spooled") {
			t.Errorf("job %s: passed events %+v, want one saying the result was spooled", j.ID, passed)
		}
	}
	if info, err := topo.Dead.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %+v, %v; want none", info, err)
	}
	for _, w := range workers {
		fleettest.Eventually(t, 30*time.Second, "the worker to see the store answer again", func() bool {
			return w.Status().Store == ""
		})
	}
}
