//go:build unix

package fault

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
)

// Three nats-server nodes hold the topology at three replicas. Two workers
// (four sim slots each) run 300 jobs; mid-run the node leading BENCH_JOBS
// is shut down, and the second half of the jobs is submitted right after.
// Clients reconnect by themselves, every job ends with exactly one result,
// and no result is written twice (duplicate deliveries are allowed and
// counted).
func TestStreamLeaderNodeShutDownMidRun(t *testing.T) {
	t.Parallel()
	cluster, err := embedded.StartCluster(3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Shutdown)

	tc := topology.Config{AckWait: 3 * time.Second, Replicas: 3}
	fb, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := NewCountingBucket(fb)
	// Each client starts on its own node (w1 on node 1, w2 on node 2, the
	// producer on node 3), so whichever node leads BENCH_JOBS, some client
	// loses its server with it and must reconnect to another.
	pnc := connectFirst(t, cluster, 2)
	js, err := jetstream.New(pnc)
	if err != nil {
		t.Fatal(err)
	}
	topo := fleettest.Topology(t, js, tc)
	conns := []*nats.Conn{pnc}
	for i, id := range []string{"w1", "w2"} {
		nc := connectFirst(t, cluster, i)
		conns = append(conns, nc)
		fleettest.StartWorker(t, worker.Config{
			ID: id, Conn: nc, Store: store, Slots: fleettest.SimSlots(id, 4), AckWait: tc.AckWait, Replicas: tc.Replicas,
			Backoff: 100 * time.Millisecond, IdlePoll: 100 * time.Millisecond, Log: zerolog.Nop(),
		})
	}

	const perRun = 150
	runs := []string{"failover-before", "failover-after"}
	var jobs []*protocol.Job
	submit := func(run string) {
		batch := fleettest.SimJobs(t, run, perRun, map[string]string{"sim.duration": "100ms"})
		res := fleettest.Submit(t, js, topo, store, run, protocol.PriorityNormal, batch)
		if res.Published != perRun {
			t.Fatalf("run %s: published %d jobs, want %d", run, res.Published, perRun)
		}
		jobs = append(jobs, batch...)
	}
	submit(runs[0])
	countResults := func() int {
		n := 0
		for _, run := range runs {
			rs, _, _ := index.QueryJSON(context.Background(), store, index.Filter{Run: run})
			n += len(rs)
		}
		return n
	}
	fleettest.Eventually(t, 30*time.Second, "the first results", func() bool { return countResults() >= 40 })

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	info, err := topo.Jobs.Info(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("BENCH_JOBS is not replicated on three nodes: %+v", info.Cluster)
	}
	leader := cluster.Server(info.Cluster.Leader)
	if leader == nil {
		t.Fatalf("no node named %q", info.Cluster.Leader)
	}
	var orphans []*nats.Conn
	for _, nc := range conns {
		if nc.ConnectedServerName() == info.Cluster.Leader {
			orphans = append(orphans, nc)
		}
	}
	if len(orphans) == 0 {
		t.Fatalf("no client is connected to the leader %s", info.Cluster.Leader)
	}
	before := countResults()
	leader.Shutdown()
	leader.WaitForShutdown()
	t.Logf("shut down %s, the BENCH_JOBS leader, after %d results", info.Cluster.Leader, before)

	// The producer keeps working through the failover.
	submit(runs[1])

	fleettest.Eventually(t, 50*time.Second, fmt.Sprintf("%d results", 2*perRun), func() bool {
		return countResults() == 2*perRun
	})
	written, conflicts, found := store.Counts()
	redelivered := 0
	for _, run := range runs {
		results := fleettest.Results(t, store, run)
		for _, j := range jobs {
			if j.Run != run {
				continue
			}
			r, ok := results[j.ID]
			if !ok {
				t.Fatalf("job %s of %s has no result", j.ID, run)
			}
			if r.Status != protocol.StatusPassed {
				t.Errorf("job %s: status %s (%v)", j.ID, r.Status, r.Error)
			}
			if r.Attempt > 1 {
				redelivered++
			}
			if n := written[storage.ResultKey(r.RunCreatedAt, run, j.ID)]; n != 1 {
				t.Errorf("job %s: result written %d times, want exactly once", j.ID, n)
			}
		}
	}
	for _, nc := range orphans {
		if nc.Stats().Reconnects == 0 || !nc.IsConnected() {
			t.Errorf("a client of the dead node did not reconnect (reconnects %d, status %v)", nc.Stats().Reconnects, nc.Status())
		}
	}
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	info, err = topo.Jobs.Info(ctx)
	cancel()
	if err != nil {
		t.Fatalf("BENCH_JOBS after failover: %v", err)
	}
	t.Logf("%d jobs, %d results, 0 written twice; new leader %s; %d redelivered, %d duplicate deliveries caught by the existence check, %d refused by the write-once create",
		len(jobs), len(written), info.Cluster.Leader, redelivered, found, conflicts)
	t.Logf("%d of 3 clients were on the dead node and reconnected", len(orphans))
}

// connectFirst connects to every node of the cluster, trying node first
// (no random order), reconnecting forever; it closes at cleanup.
func connectFirst(t *testing.T, c *embedded.Cluster, first int) *nats.Conn {
	t.Helper()
	var urls []string
	for i := range c.Servers {
		urls = append(urls, c.Servers[(first+i)%len(c.Servers)].ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
