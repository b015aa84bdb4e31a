package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
)

// bigMatrix writes a sim matrix of models × batch sizes cells.
func bigMatrix(t *testing.T, models, batches int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("defaults:\n  pool: sim\n  runner: sim\n  benchmark: {loop_count: 1}\nmatrix:\n  benchmark:\n")
	for i := 0; i < models; i++ {
		fmt.Fprintf(&b, "    - {model: simnet-%d}\n", i)
	}
	b.WriteString("  batch_size: [")
	for i := 1; i <= batches; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i)
	}
	b.WriteString("]\n")
	path := filepath.Join(t.TempDir(), "matrix.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A 10,000-job run submits on a default nats-server (1 MB max payload,
// so the manifest is stored in chunks) and shows in `runs list` and
// `runs show` with all its jobs.
func TestTenThousandJobRunOnDefaultServer(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	matrix := bigMatrix(t, 100, 100)
	code, out, errOut := ciRun(t, "submit", "--nats", srv.ClientURL(), "--log-level", "warn", "--matrix", matrix, "--run", "big-10k")
	if code != ExitOK || !strings.Contains(out, "10000 jobs submitted") {
		t.Fatalf("submit of 10,000 jobs: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = ciRun(t, "runs", "list", "--nats", srv.ClientURL(), "--format", "json")
	if code != ExitOK {
		t.Fatalf("runs list: exit %d: %s", code, errOut)
	}
	var mans []protocol.RunManifest
	if err := json.Unmarshal([]byte(out), &mans); err != nil {
		t.Fatalf("runs list json: %v", err)
	}
	if len(mans) != 1 || mans[0].Run != "big-10k" || len(mans[0].Jobs) != 10000 {
		n := -1
		if len(mans) == 1 {
			n = len(mans[0].Jobs)
		}
		t.Fatalf("runs list shows %d runs (jobs of the first: %d), want big-10k with 10000 jobs", len(mans), n)
	}
	code, out, _ = ciRun(t, "runs", "list", "--nats", srv.ClientURL())
	if code != ExitOK || !strings.Contains(out, "big-10k") || !strings.Contains(out, "10000") {
		t.Fatalf("runs list table: exit %d\n%s", code, out)
	}
}

// A matrix over the cell limit is a usage error naming the limit, found
// before any job is built.
func TestMatrixCellLimit(t *testing.T) {
	t.Parallel()
	matrix := bigMatrix(t, 101, 500) // 50,500 cells
	code, out, errOut := ciRun(t, "submit", "--matrix", matrix, "--run", "too-big")
	if code != ExitUsage || !strings.Contains(errOut, "cells") || !strings.Contains(errOut, "limit") {
		t.Fatalf("exit %d, want %d naming the cell limit\n%s%s", code, ExitUsage, out, errOut)
	}
}
