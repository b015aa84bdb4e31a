//go:build unix

package fault

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

var chaosLine = regexp.MustCompile(`^jobs (\d+) results (\d+) lost (\d+) duplicates (\d+) redelivered (\d+)$`)

// runChaos runs `benchfleet bench chaos` with args and checks its one line:
// nothing lost, nothing recorded twice, and (with kills) some job
// redelivered after a SIGKILL.
func runChaos(t *testing.T, jobs, kills int, args ...string) {
	t.Helper()
	bin := clitest.Binary(t)
	args = append([]string{"bench", "chaos", "--jobs", strconv.Itoa(jobs), "--kills", strconv.Itoa(kills),
		"--data", t.TempDir(), "--log-format", "json"}, args...)
	p := clitest.Start(t, bin, args...)
	<-p.Done()
	out := p.Output()
	var line []string
	for _, l := range strings.Split(out, "\n") {
		if m := chaosLine.FindStringSubmatch(l); m != nil {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no result line from bench chaos (%v):\n%s", p.Err(), clitest.Tail(out, 4000))
	}
	t.Logf("benchfleet %s\n%s", strings.Join(args, " "), line[0])
	n := func(i int) int { v, _ := strconv.Atoi(line[i]); return v }
	if n(1) != jobs || n(3) != 0 || n(4) != 0 {
		t.Errorf("bench chaos: %s, want jobs %d lost 0 duplicates 0", line[0], jobs)
	}
	if n(2) != jobs {
		t.Logf("%d jobs were dead-lettered instead of recorded", jobs-n(2))
	}
	if kills > 0 && n(5) == 0 {
		t.Errorf("bench chaos: %s: no job redelivered after %d SIGKILLs of busy workers", line[0], kills)
	}
	if err := p.Err(); err != nil {
		t.Errorf("bench chaos exited with %v", err)
	}
	if t.Failed() {
		t.Logf("output:\n%s", clitest.Tail(out, 4000))
	}
}

// Two worker processes, 60 jobs, two SIGKILLs of a busy worker: every job
// ends with exactly one result.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	runChaos(t, 60, 2, "--workers", "2", "--slots-per-worker", "2", "--job-duration", "300ms", "--ack-wait", "2s")
}

// The long soak: BENCHFLEET_SOAK=1 go test ./internal/e2e/fault -run Soak -timeout 30m
// (BENCHFLEET_SOAK_JOBS and BENCHFLEET_SOAK_KILLS change its size).
func TestChaosSoak(t *testing.T) {
	if os.Getenv("BENCHFLEET_SOAK") == "" {
		t.Skip("set BENCHFLEET_SOAK=1 to run the chaos soak")
	}
	jobs, kills := envInt(t, "BENCHFLEET_SOAK_JOBS", 3000), envInt(t, "BENCHFLEET_SOAK_KILLS", 30)
	start := time.Now()
	runChaos(t, jobs, kills, "--workers", "4", "--slots-per-worker", "4", "--job-duration", "300ms", "--ack-wait", "2s")
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
