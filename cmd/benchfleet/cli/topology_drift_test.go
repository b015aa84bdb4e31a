package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// The queue flags of submit do nothing once the topology
// exists. submit says so on stderr, naming each flag, the live value and
// how to change it. (--max-deliver and --heartbeat, the worker's, are
// refused: TestWorkerSettingsRefusedWhereNoWorkerRuns.)
func TestSubmitWarnsAboutQueueFlagsItCannotApply(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1) // topology made with ack wait 5s, replicas 1; the worker's max deliver is the default 4
	code, out, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--label", "sim.fail=transient", "--run", "drift-1", "--wait", "--timeout", "2m",
		"--ack-wait", "10s", "--replicas", "3")...)
	if code != ExitFailed {
		t.Fatalf("submit of an always-failing job: exit %d, want %d\n%s\n%s", code, ExitFailed, out, errOut)
	}
	for _, want := range []string{
		"warning: --ack-wait 10s has no effect: the live consumer jobs-sim-", "has ack-wait 5s",
		"`benchfleet topology apply --ack-wait 10s`",
		"warning: --replicas 3 has no effect: the live stream BENCH_JOBS has replicas 1 (and 6 more)", // BENCH_UNTRUSTED, BENCH_EVENTS, BENCH_DEAD and the three buckets
		"`benchfleet topology apply --replicas 3`",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	// The worker's limit: 4 attempts.
	code, out, errOut = ciRun(t, f.args("dlq", "list", "--format", "json")...)
	if code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", code, errOut)
	}
	var dead []struct {
		Attempts int    `json:"attempts"`
		Run      string `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &dead); err != nil {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	if len(dead) != 1 || dead[0].Attempts != 4 {
		t.Fatalf("dead letters %+v, want one after 4 attempts", dead)
	}

	// The same values as the live topology, or no flags at all: no warning.
	for _, args := range [][]string{
		{"--ack-wait", "5s", "--replicas", "1"},
		{},
	} {
		code, out, errOut = ciRun(t, f.args(append([]string{"submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4"}, args...)...)...)
		if code != 0 || strings.Contains(errOut, "warning") {
			t.Errorf("submit %v: exit %d, want 0 and no warning\n%s\n%s", args, code, out, errOut)
		}
	}
}

// topology apply changes --ack-wait (and --replicas) without a warning.
func TestTopologyApplyChangesAckWait(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 1)
	code, out, errOut := ciRun(t, "topology", "apply", "--nats", f.url, "--ack-wait", "7s", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("topology apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("stderr:\n%s", errOut)
	}
	// It applied the ack wait: submit with it now sees no difference.
	code, _, errOut = ciRun(t, f.args("submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4", "--ack-wait", "7s")...)
	if code != 0 || strings.Contains(errOut, "warning") {
		t.Errorf("submit after apply: exit %d\n%s", code, errOut)
	}
}
