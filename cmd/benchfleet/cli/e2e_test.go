package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// The kit's names under the short names this package's tests use.
var (
	cmdline          = clitest.CLI{Main: cli.Run} // the command line in process
	run              = cmdline.Output
	benchfleetBinary = clitest.Binary // the real binary, built once per test process
	freePort         = fleettest.FreePort
)

// `benchfleet dev` in one process, `benchfleet submit --wait` in another,
// then `results query` finds the result in the dev store.
func TestDevSubmitWaitQuery(t *testing.T) {
	t.Parallel()
	bin := benchfleetBinary(t)
	data := t.TempDir()
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)

	var devOut bytes.Buffer
	dev := exec.Command(bin, "dev", "--data", data, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--slots", "cpu=1,sim=2", "--log-format", "json")
	dev.Stdout, dev.Stderr = &devOut, &devOut
	dev.WaitDelay = 5 * time.Second
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dev.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = dev.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = dev.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("dev output:\n%s", devOut.String())
		}
	})
	// Wait for the dev server to accept connections.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev did not listen: %s", devOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	submit := exec.CommandContext(ctx, bin, "submit", "--nats", url, "--store", "file://"+filepath.Join(data, "store"), "--pool", "cpu", "--runner", "cpu", "--model", "mlp",
		"--batch-size", "8", "--loop-count", "16", "--run", "devrun1", "--wait", "--timeout", "2m", "--log-format", "json")
	out, err := submit.CombinedOutput()
	if err != nil {
		t.Fatalf("submit --wait: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "passed") {
		t.Fatalf("submit output has no passed job:\n%s", out)
	}

	code, stdout, stderr := run(t, "results", "query", "--store", "file://"+filepath.Join(data, "store"), "--run", "devrun1", "--format", "json")
	if code != 0 {
		t.Fatalf("results query exit %d: %s", code, stderr)
	}
	var rs []protocol.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("results query json: %v\n%s", err, stdout)
	}
	if len(rs) != 1 || rs[0].Run != "devrun1" || rs[0].Status != protocol.StatusPassed ||
		rs[0].Measurements.SamplesPerSec <= 0 || rs[0].PCC.Value == 0 || rs[0].Schema != protocol.SchemaResult {
		t.Fatalf("unexpected results: %+v", rs)
	}
}

// Bad flag values and bad matrix files exit 64 with a message naming them.
func TestSubmitUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknownKey := write("unknown.yaml", "defaults:\n  pool: cpu\n  benchmark: {model: mlp, batch_size: 1, loop_count: 2}\nmatrixx:\n  pool: [cpu]\n")
	badBatch := write("badbatch.yaml", "defaults:\n  pool: cpu\n  benchmark: {model: mlp, batch_size: 0, loop_count: 2}\n")
	badExclude := write("badexclude.yaml", "defaults:\n  pool: cpu\n  benchmark: {model: mlp, batch_size: 1, loop_count: 2}\nexclude:\n  - {colour: red}\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero batch", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "0", "--loop-count", "4"}, "--batch-size"},
		{"negative loop", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "-3"}, "--loop-count"},
		{"huge batch", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "99999999", "--loop-count", "4"}, "benchmark.batch_size"},
		{"bad format", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4", "--data-format", "int8"}, "benchmark.data_format"},
		{"bad pool", []string{"--pool", "tpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4"}, "pool"},
		{"unknown cpu model", []string{"--pool", "cpu", "--model", "notamodel", "--batch-size", "1", "--loop-count", "4"}, "notamodel"},
		{"bad runner", []string{"--pool", "cpu", "--runner", "docker", "--model", "mlp", "--batch-size", "1", "--loop-count", "4"}, "runner"},
		{"bad priority", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4", "--priority", "urgent"}, "--priority"},
		{"shell run id", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4", "--run", "x;rm -rf"}, "--run"},
		{"dotdot run id", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4", "--run", "../etc"}, "--run"},
		{"non-numeric flag", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "eight", "--loop-count", "4"}, "batch-size"},
		{"unknown flag", []string{"--pool", "cpu", "--colour", "red"}, "colour"},
		{"bad label", []string{"--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "4", "--label", "novalue"}, "--label"},
		{"matrix unknown key", []string{"--matrix", unknownKey}, "matrixx"},
		{"matrix zero batch", []string{"--matrix", badBatch}, "benchmark.batch_size"},
		{"matrix bad exclude", []string{"--matrix", badExclude}, "colour"},
		{"matrix missing", []string{"--matrix", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// No --nats: usage errors are found before any connection.
			code, _, stderr := run(t, append([]string{"submit"}, c.args...)...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, cli.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Fatalf("stderr does not name %q: %s", c.want, stderr)
			}
		})
	}
}

// The README's local example matrix expands into the jobs it promises.
func TestLocalExampleMatrix(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../../deploy/examples/matrix-local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := submit.ParseMatrix(data)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := m.Jobs("example")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 6 (4 cpu, 2 sim)", len(jobs))
	}
}
