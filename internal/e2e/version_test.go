package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
)

// `make build` stamps the commit it builds: `benchfleet version` and
// `--version` name it (or, outside a git checkout, say it is unknown), and
// a worker of that binary carries it in its heartbeat (`fleet status`), in
// /metrics (benchfleet_build_info) and in every result it writes.
func TestVersionNamesTheCommitBuilt(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("the test builds with `make build`: install make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "benchfleet")
	build := exec.Command("make", "-s", "build", "BIN="+bin)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	head, gitErr := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	rev := strings.TrimSpace(string(head))
	want := "revision " + rev
	if gitErr != nil {
		rev, want = "", "revision unknown"
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) || !strings.HasPrefix(string(out), "benchfleet ") {
			t.Errorf("benchfleet %s: %v, want %q in\n%s", args[0], err, want, out)
		}
	}
	if rev == "" {
		t.Logf("not a git checkout (%v): the binary says the revision is unknown", gitErr)
		return
	}

	// A worker of this binary reports the revision everywhere.
	srv := fleettest.Server(t)
	storeDir := filepath.Join(dir, "store")
	addr := fmt.Sprintf("127.0.0.1:%d", fleettest.FreePort(t))
	env := append(os.Environ(), "BENCHFLEET_STATE_DIR="+filepath.Join(dir, "state"), "NATS_URL="+srv.ClientURL(), "BENCHFLEET_STORE=file://"+storeDir)
	w := exec.Command(bin, "worker", "--slots", "sim=1", "--id", "stamped", "--metrics-listen", addr, "--work-dir", filepath.Join(dir, "work"), "--log-level", "warn")
	var wlog strings.Builder
	w.Env, w.Stdout, w.Stderr, w.WaitDelay = env, &wlog, &wlog, 5*time.Second
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Kill()
		_ = w.Wait()
		if t.Failed() {
			t.Logf("worker log:\n%s", wlog.String())
		}
	})
	var metrics string
	fleettest.Eventually(t, 30*time.Second, "benchfleet_build_info in /metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		metrics = string(b)
		return strings.Contains(metrics, "benchfleet_build_info{")
	})
	if !strings.Contains(metrics, `revision="`+rev) {
		t.Errorf("benchfleet_build_info does not carry revision %s:\n%s", rev, grepLines(metrics, "benchfleet_build_info"))
	}
	sub := exec.Command(bin, "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--label", "sim.duration=1ms", "--run", "stamped-run", "--wait", "--timeout", "60s")
	sub.Env = env
	if out, err := sub.CombinedOutput(); err != nil {
		t.Fatalf("submit --wait: %v\n%s", err, out)
	}
	store, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fleettest.Results(t, store, "stamped-run") {
		if !strings.HasPrefix(r.Worker.Revision, rev) || r.Worker.Version == "" {
			t.Errorf("result %s: worker %+v, want revision %s", r.Job, r.Worker, rev)
		}
	}
	fs := exec.Command(bin, "fleet", "status", "--format", "json")
	fs.Env = env
	out, err := fs.Output()
	var sts []protocol.WorkerStatus
	if err != nil || json.Unmarshal(out, &sts) != nil || len(sts) != 1 || !strings.HasPrefix(sts[0].Revision, rev) {
		t.Errorf("fleet status --format json: %v, want the worker with revision %s:\n%s", err, rev, out)
	}
	fs = exec.Command(bin, "fleet", "status")
	fs.Env = env
	if out, err := fs.Output(); err != nil || !strings.Contains(string(out), rev[:12]) {
		t.Errorf("fleet status: %v, want revision %s in the table:\n%s", err, rev[:12], out)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
