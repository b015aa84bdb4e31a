package worker_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/storage/storeurl"
	"github.com/benchfleet/benchfleet/worker"
)

// The S3 server stops while jobs run and starts again: results spool
// locally meanwhile, and every job ends with exactly one result in the
// bucket, at the layout of storage.ResultKey.
func TestS3OutageSpoolsAndEveryJobHasOneResult(t *testing.T) {
	s3 := s3test.Start(t)
	s3.SetEnv(t) // not parallel: sets the AWS_* environment
	ctx := t.Context()
	bucket, err := storeurl.Open(ctx, s3.URL("farm"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	// The spool's log is shown when the test fails: why an entry stayed.
	var spoolLog syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("spool log:\n%s", spoolLog.String())
		}
	})
	sp, err := spool.NewWithConfig(spool.Config{Dir: t.TempDir(), Bucket: bucket, Log: zerolog.New(&spoolLog),
		RetryMin: 100 * time.Millisecond, RetryMax: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopSpool := context.WithCancel(context.Background())
	defer stopSpool()
	go sp.Run(sctx)

	srv := fleettest.Server(t)
	tc := topology.Config{AckWait: 10 * time.Second}
	nc, _ := fleettest.Connect(t, srv.ClientURL())
	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, tc)
	fleettest.StartWorker(t, worker.Config{ID: "w", Conn: nc, Store: bucket, Sink: sp, Slots: fleettest.SimSlots("s", 4),
		AckWait: tc.AckWait, Backoff: 50 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop()})

	const run, n = "s3-outage", 40
	jobs := fleettest.SimJobs(t, run, n, map[string]string{"sim.duration": "150ms"})
	fleettest.Submit(t, js, topo, nil, run, protocol.PriorityNormal, jobs)

	// Stop the server once some results are in, keep it down while more
	// jobs finish, then start it again.
	fleettest.Eventually(t, 60*time.Second, "first results in the bucket", func() bool {
		rs, _, _ := index.QueryJSON(context.Background(), bucket, index.Filter{Run: run})
		return len(rs) >= 4
	})
	s3.Stop()
	fleettest.Eventually(t, 60*time.Second, "results to spool during the outage", func() bool { return sp.Pending() >= 4 })
	s3.Start()

	fleettest.Eventually(t, 90*time.Second, "every result in the bucket and the spool drained", func() bool {
		rs, _, err := index.QueryJSON(context.Background(), bucket, index.Filter{Run: run})
		return err == nil && len(rs) == n && sp.Pending() == 0
	})
	results := fleettest.Results(t, bucket, run)
	for _, j := range jobs {
		r, ok := results[j.ID]
		if !ok {
			t.Fatalf("job %s has no result", j.ID)
		}
		if r.Status != protocol.StatusPassed {
			t.Errorf("job %s: %s %v", j.ID, r.Status, r.Error)
		}
		if len(r.Artifacts) == 0 {
			t.Errorf("job %s: no artifacts recorded", j.ID)
		}
		for _, a := range r.Artifacts {
			if ok, err := bucket.Exists(ctx, a.Key); err != nil || !ok {
				t.Errorf("job %s: artifact %s missing (%v)", j.ID, a.Key, err)
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the spool's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
