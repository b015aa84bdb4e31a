//go:build unix

package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
)

// Two of three NATS nodes are shut down, so JetStream has no quorum while
// the worker's connection stays up (on the third node). The worker (the
// real binary) says so: /healthz is 503 naming JetStream,
// benchfleet_jetstream_available reads 0 while benchfleet_nats_connected
// still reads 1; and `benchfleet fleet status` exits 69 ("could not
// reach"), not 1, saying the cluster has lost its quorum.
func TestQuorumLostShowsOnHealthzMetricsAndFleetStatus(t *testing.T) {
	t.Parallel()
	cluster, err := embedded.StartCluster(3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Shutdown)
	_, js := fleettest.Connect(t, cluster.ClientURLs())
	fleettest.Topology(t, js, topology.Config{AckWait: 5 * time.Second, Replicas: 3})

	bin := clitest.Binary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", fleettest.FreePort(t))
	survivor := cluster.Servers[2].ClientURL()
	w := clitest.Start(t, bin, "worker", "--nats", survivor, "--replicas", "3", "--store", "file://"+t.TempDir(),
		"--slots", "sim=2", "--id", "quorum-w", "--metrics-listen", addr, "--log-level", "info")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fleettest.Eventually(t, 60*time.Second, "the worker healthy", func() bool {
		code, _ := get("/healthz")
		return code == http.StatusOK
	})
	if _, m := get("/metrics"); !strings.Contains(m, "\nbenchfleet_jetstream_available 1\n") {
		t.Fatalf("benchfleet_jetstream_available is not 1 on a healthy cluster:\n%s", grepLines(m, "benchfleet_"))
	}
	fleet := func() (int, string, time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "fleet", "status", "--nats", survivor, "--log-level", "error")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out), time.Since(start)
		case errors.As(err, &exit):
			return exit.ExitCode(), string(out), time.Since(start)
		}
		t.Fatalf("fleet status: %v", err)
		return 0, "", 0
	}
	if code, out, _ := fleet(); code != 0 || !strings.Contains(out, "quorum-w") {
		t.Fatalf("fleet status on a healthy cluster: exit %d\n%s", code, out)
	}

	cluster.Servers[0].Shutdown()
	cluster.Servers[1].Shutdown()
	lost := time.Now()
	var body string
	fleettest.Eventually(t, 60*time.Second, "/healthz not ok", func() bool {
		var code int
		code, body = get("/healthz")
		return code == http.StatusServiceUnavailable
	})
	t.Logf("/healthz 503 %s after the quorum was lost: %s", time.Since(lost).Round(time.Millisecond), strings.TrimSpace(body))
	if !strings.Contains(body, "jetstream: not answering since") {
		t.Errorf("/healthz does not say JetStream is not answering: %q", body)
	}
	_, m := get("/metrics")
	for _, want := range []string{"\nbenchfleet_jetstream_available 0\n", "\nbenchfleet_nats_connected 1\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", strings.TrimSpace(want), grepLines(m, "benchfleet_nats", "benchfleet_jetstream"))
		}
	}
	code, out, took := fleet()
	t.Logf("fleet status: exit %d after %s: %s", code, took.Round(time.Millisecond), strings.TrimSpace(out))
	if code != 69 {
		t.Errorf("fleet status without quorum: exit %d, want 69\n%s", code, out)
	}
	if !strings.Contains(out, "quorum") {
		t.Errorf("fleet status does not say the cluster may have lost its quorum:\n%s", out)
	}
	select {
	case <-w.Done():
		t.Fatalf("the worker exited: %v\n%s", w.Err(), clitest.Tail(w.Output(), 4000))
	default:
	}
}

// grepLines is the lines of s that start with one of prefixes.
func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
