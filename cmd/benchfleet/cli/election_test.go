//go:build linux

package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/topology"
)

// natsServerBinary builds the real nats-server (the version go.mod pins)
// once per test process.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	return clitest.Build(t, "github.com/nats-io/nats-server/v2")
}

// natsNode is one nats-server process of a test cluster.
type natsNode struct {
	name string
	url  string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// kill sends SIGKILL: the node dies without stepping down its leaderships,
// as a crashed or power-cut host does.
func (n *natsNode) kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// startNATSCluster runs three real nats-server processes clustered on
// loopback with JetStream, and waits until JetStream answers.
func startNATSCluster(t *testing.T) []*natsNode {
	t.Helper()
	bin := natsServerBinary(t)
	const n = 3
	ports := make([]int, 2*n)
	var ls []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
	}
	dir := t.TempDir()
	var nodes []*natsNode
	for i := range n {
		name := fmt.Sprintf("node-%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		body := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster { name: benchfleet, listen: 127.0.0.1:%d, routes: [%s] }
`, name, ports[i], filepath.Join(dir, name), ports[n+i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		cmd := exec.Command(bin, "-c", conf)
		cmd.Stdout, cmd.Stderr = &log, &log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		node := &natsNode{name: name, url: fmt.Sprintf("nats://127.0.0.1:%d", ports[i]), cmd: cmd, log: &log, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(node.done) }()
		t.Cleanup(node.kill)
		nodes = append(nodes, node)
	}
	nc := natsConnect(t, nodes)
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nats-server cluster has no JetStream after 60s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nodes
}

func clusterURLs(nodes []*natsNode) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url)
	}
	return strings.Join(urls, ",")
}

func natsConnect(t *testing.T, nodes []*natsNode) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(clusterURLs(nodes), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// The nats-server process leading BENCH_JOBS is killed
// (SIGKILL: no leadership hand-over, the cluster must notice and elect) and
// `submit` starts at once. Its topology check retries, each lookup with a
// short deadline, until the new leader answers, and the submit succeeds
// within 30 s.
func TestSubmitDuringLeaderElection(t *testing.T) {
	t.Parallel()
	nodes := startNATSCluster(t)
	nc := natsConnect(t, nodes)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tc := topology.Config{AckWait: 5 * time.Second, Replicas: 3}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	topo, err := topology.Ensure(ctx, js, tc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := topo.Jobs.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leader *natsNode
	for _, n := range nodes {
		if n.name == info.Cluster.Leader {
			leader = n
		}
	}
	if leader == nil {
		t.Fatalf("BENCH_JOBS leader %q is none of the nodes", info.Cluster.Leader)
	}
	urls := clusterURLs(nodes)
	leader.kill()

	start := time.Now()
	code, out, errOut := ciRun(t, "submit", "--nats", urls, "--replicas", "3", "--ack-wait", "5s", "--log-level", "warn",
		"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "election")
	took := time.Since(start)
	if code != ExitOK {
		t.Fatalf("submit during the election: exit %d after %s\nstdout:\n%s\nstderr:\n%s", code, took.Round(time.Millisecond), out, errOut)
	}
	if took > 30*time.Second {
		t.Errorf("submit took %s, want under 30s", took.Round(time.Millisecond))
	}
	if !strings.Contains(out, "run election") {
		t.Errorf("stdout does not report the run:\n%s", out)
	}
	if !strings.Contains(errOut, "electing a leader") {
		t.Errorf("stderr does not say the cluster is electing a leader:\n%s", errOut)
	}
	t.Logf("BENCH_JOBS leader %s killed; submit succeeded in %s\n%s%s", leader.name, took.Round(time.Millisecond), out, errOut)
}

// Two of three nodes are killed, so the cluster has no
// quorum and elects no leader. `submit` keeps trying until its deadline
// (30 s), then exits 69 ("could not reach"), not 1 ("a job failed"), with a
// message that says why.
func TestSubmitWithoutQuorumExitsUnavailable(t *testing.T) {
	t.Parallel()
	nodes := startNATSCluster(t)
	nc := natsConnect(t, nodes)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := topology.Ensure(ctx, js, topology.Config{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	nodes[0].kill()
	nodes[1].kill()
	start := time.Now()
	code, out, errOut := ciRun(t, "submit", "--nats", clusterURLs(nodes), "--replicas", "3", "--log-level", "error",
		"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "no-quorum")
	took := time.Since(start)
	if code != ExitUnavailable {
		t.Fatalf("submit without quorum: exit %d after %s, want %d\nstdout:\n%s\nstderr:\n%s", code, took.Round(time.Millisecond), ExitUnavailable, out, errOut)
	}
	for _, want := range []string{"topology: ", "no JetStream leader answered", "electing a leader", "quorum"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if took > 45*time.Second {
		t.Errorf("submit gave up after %s, want about 30s", took.Round(time.Millisecond))
	}
	t.Logf("exit %d after %s: %s", code, took.Round(time.Millisecond), strings.TrimSpace(errOut))
}

// `worker` started while the BENCH_JOBS leader's node is
// freshly killed serves once the new leader is elected (within 30 s)
// instead of failing its topology check.
func TestWorkerStartsDuringLeaderElection(t *testing.T) {
	t.Parallel()
	nodes := startNATSCluster(t)
	js, err := jetstream.New(natsConnect(t, nodes))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	topo, err := topology.Ensure(ctx, js, topology.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	info, err := topo.Jobs.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.name == info.Cluster.Leader {
			n.kill()
		}
	}
	wctx, stop := context.WithCancel(t.Context())
	var out, errb clitest.Buffer
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- inproc.Run(wctx, &out, &errb, "worker", "--nats", clusterURLs(nodes), "--replicas", "3", "--store", "file://"+t.TempDir(),
			"--slots", "sim=1", "--id", "elected", "--state-dir", t.TempDir(), "--log-level", "warn")
	}()
	defer func() { stop(); <-done }()
	for !strings.Contains(errb.String(), "serving") {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("worker exited %d after %s:\n%s", code, time.Since(start).Round(time.Millisecond), errb.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("worker not serving 30s after the leader was killed:\n%s", errb.String())
		}
	}
	t.Logf("worker serving %s after the BENCH_JOBS leader %s was killed", time.Since(start).Round(time.Millisecond), info.Cluster.Leader)
}

// A NATS server that cannot be reached at all is exit 69
// too ("could not reach"), not 1.
func TestSubmitUnreachableNATSExitsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close() // nothing listens there now
	code, out, errOut := ciRun(t, "submit", "--nats", url, "--log-level", "error",
		"--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--run", "unreachable")
	if code != ExitUnavailable || !strings.Contains(errOut, "could not reach NATS") {
		t.Fatalf("submit to an unreachable NATS: exit %d, want %d saying it could not reach NATS\n%s\n%s", code, ExitUnavailable, out, errOut)
	}
}
