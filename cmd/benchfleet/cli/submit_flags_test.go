package cli_test

import (
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
)

// --max-deliver and --heartbeat are settings of each worker: submit and
// topology apply, which run none, refuse them (exit 64, before any
// connection) saying where they go, and do not list them in --help;
// the worker still takes them.
func TestWorkerSettingsRefusedWhereNoWorkerRuns(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--nats", "nats://127.0.0.1:1"} // never dialled: the flags are refused first
	job := []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(job, "--max-deliver", "2"), "--max-deliver is a worker setting, not taken by benchfleet submit"},
		{append(job, "--heartbeat", "2s"), "--heartbeat is a worker setting, not taken by benchfleet submit"},
		{[]string{"topology", "apply", "--max-deliver", "2"}, "--max-deliver is a worker setting, not taken by benchfleet topology apply"},
		{[]string{"topology", "apply", "--heartbeat", "1s", "--ack-wait", "7s"}, "--heartbeat is a worker setting, not taken by benchfleet topology apply"},
	} {
		code, out, errOut := run(t, append(tc.args, nowhere...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "`benchfleet worker`") {
			t.Errorf("%v: exit %d, want %d saying %q and naming the worker\n%s%s", tc.args, code, cli.ExitUsage, tc.want, out, errOut)
		}
	}
	for _, c := range [][]string{{"submit"}, {"topology", "apply"}} {
		_, out, _ := run(t, append(c, "--help")...)
		if strings.Contains(out, "--max-deliver int") || strings.Contains(out, "--heartbeat duration") || !strings.Contains(out, "--ack-wait duration") {
			t.Errorf("%v --help lists the worker's settings (or not --ack-wait):\n%s", c, out)
		}
	}
	_, out, _ := run(t, "worker", "--help")
	if !strings.Contains(out, "--max-deliver int") || !strings.Contains(out, "--heartbeat duration") {
		t.Errorf("worker --help does not list --max-deliver and --heartbeat:\n%s", out)
	}
}
