//go:build unix

package fault

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// The BENCH_JOBS leader dies while a producer on another node is
// publishing 3000 jobs. Acks of the publishes in flight are lost with the
// leader; Submit must neither hang nor fail nor queue a job twice: it
// re-publishes the unacknowledged jobs (same message id) once a new leader
// is elected, and the stream ends with exactly 3000 jobs.
func TestSubmitWhileStreamLeaderDies(t *testing.T) {
	t.Parallel()
	cluster, err := embedded.StartCluster(3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Shutdown)
	tc := topology.Config{AckWait: 3 * time.Second, Replicas: 3}
	_, js := fleettest.Connect(t, cluster.ClientURLs())
	topo := fleettest.Topology(t, js, tc)
	info, err := topo.Jobs.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	leader := cluster.Server(info.Cluster.Leader)
	// The producer sits on a node that survives: its connection stays up,
	// only the leader's acks go missing.
	first := 0
	for i, s := range cluster.Servers {
		if s != leader {
			first = i
			break
		}
	}
	pjs, err := jetstream.New(connectFirst(t, cluster, first))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	jobs := fleettest.SimJobs(t, "submit-failover", n, nil)
	for _, j := range jobs {
		j.Priority = protocol.PriorityNormal
	}

	// Kill the leader as soon as the first jobs are stored.
	killed := make(chan uint64, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			si, err := topo.Jobs.Info(ctx)
			cancel()
			if err == nil && si.State.Msgs > 0 {
				leader.Shutdown()
				killed <- si.State.Msgs
				return
			}
			time.Sleep(time.Millisecond)
		}
		killed <- 0
	}()
	p := &submit.Submitter{JS: pjs, Runs: topo.Runs, Jobs: topo.Jobs, Log: zerolog.Nop()}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	start := time.Now()
	res, err := p.Submit(ctx, submit.Submission{Run: "submit-failover", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs})
	if err != nil {
		t.Fatalf("submit across the leader's death: %v", err)
	}
	took := time.Since(start)
	at := <-killed
	if at == 0 {
		t.Fatal("the leader was never shut down")
	}
	var si *jetstream.StreamInfo
	fleettest.Eventually(t, 30*time.Second, "BENCH_JOBS to answer after the failover", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		si, err = topo.Jobs.Info(ctx)
		return err == nil
	})
	if si.State.Msgs != n {
		t.Fatalf("BENCH_JOBS holds %d jobs after the failover, want exactly %d", si.State.Msgs, n)
	}
	if res.Published != n {
		t.Errorf("Submit reported %d jobs published, want %d", res.Published, n)
	}
	t.Logf("leader %s shut down after %d of %d jobs were stored; Submit took %s; new leader %s; stream holds %d",
		info.Cluster.Leader, at, n, took.Round(time.Millisecond), si.Cluster.Leader, si.State.Msgs)
}
