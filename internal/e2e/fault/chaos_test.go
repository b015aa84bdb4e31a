//go:build unix

package fault

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/bench"
	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

// runChaos runs the chaos bench (bench.RunChaos, whose workers are the
// real binary) and checks its report: nothing lost, nothing recorded
// twice, and (with kills) some job redelivered after a SIGKILL.
func runChaos(t *testing.T, cfg bench.ChaosConfig) {
	t.Helper()
	cfg.Exe, cfg.Dir = clitest.Binary(t), t.TempDir()
	rep, err := bench.RunChaos(t.Context(), cfg)
	if err != nil {
		t.Fatalf("bench chaos: %v (data in %s)", err, cfg.Dir)
	}
	var line, details strings.Builder
	rep.Print(&line, &details)
	t.Logf("%s%s", line.String(), details.String())
	if rep.Jobs != cfg.Jobs || !rep.OK() {
		t.Errorf("bench chaos: %s want jobs %d lost 0 duplicates 0", line.String(), cfg.Jobs)
	}
	if rep.Results != cfg.Jobs {
		t.Logf("%d jobs were dead-lettered instead of recorded", cfg.Jobs-rep.Results)
	}
	if cfg.Kills > 0 && rep.Redelivered == 0 {
		t.Errorf("bench chaos: %s no job redelivered after %d SIGKILLs of busy workers", line.String(), cfg.Kills)
	}
	if rep.Kills != cfg.Kills {
		t.Errorf("bench chaos: %d kills, want %d", rep.Kills, cfg.Kills)
	}
}

// Two worker processes, 60 jobs, two SIGKILLs of a busy worker: every job
// ends with exactly one result.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	runChaos(t, bench.ChaosConfig{Jobs: 60, Kills: 2, Workers: 2, Slots: 2, JobDuration: 300 * time.Millisecond, AckWait: 2 * time.Second,
		MaxDeliver: 4, Log: zerolog.Nop()})
}

// The long soak: BENCHFLEET_SOAK=1 go test ./internal/e2e/fault -run Soak -timeout 30m
// (BENCHFLEET_SOAK_JOBS and BENCHFLEET_SOAK_KILLS change its size).
func TestChaosSoak(t *testing.T) {
	if os.Getenv("BENCHFLEET_SOAK") == "" {
		t.Skip("set BENCHFLEET_SOAK=1 to run the chaos soak")
	}
	jobs, kills := envInt(t, "BENCHFLEET_SOAK_JOBS", 3000), envInt(t, "BENCHFLEET_SOAK_KILLS", 30)
	start := time.Now()
	runChaos(t, bench.ChaosConfig{Jobs: jobs, Kills: kills, Workers: 4, Slots: 4, JobDuration: 300 * time.Millisecond, AckWait: 2 * time.Second,
		MaxDeliver: 4, Log: zerolog.Nop()})
	t.Logf("soak took %s", time.Since(start).Round(time.Second))
}

func envInt(t *testing.T, k string, def int) int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: %v", k, v, fmt.Errorf("not a non-negative integer"))
	}
	return n
}
