package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/device/cpu"
	"github.com/benchfleet/benchfleet/protocol"
)

// A cpu job whose run would need more memory than cpu.MaxJobBytes is a
// usage error at submit (exit 64, before any connection), with a message
// naming the estimate, the limit and what to lower. (Demo-sized jobs pass
// the same check: device/cpu's TestCheckBudget.)
func TestSubmitCPUBudgetExits64(t *testing.T) {
	t.Parallel()
	est, err := cpu.EstimateBytes(protocol.Benchmark{Model: "resnet50", BatchSize: protocol.MaxBatchSize, LoopCount: 4, InputSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	code, out := badInputRun(t, "submit", "--pool", "cpu", "--runner", "cpu", "--model", "resnet50",
		"--batch-size", "4096", "--input-size", "1024", "--loop-count", "4")
	if code != cli.ExitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, cli.ExitUsage, out)
	}
	for _, want := range []string{
		fmt.Sprintf("needs an estimated %.1f GiB", float64(est)/(1<<30)),
		fmt.Sprintf("limit of %.1f GiB", float64(cpu.MaxJobBytes)/(1<<30)),
		"lower batch_size", "input_size",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("message does not name %q:\n%s", want, out)
		}
	}
}
