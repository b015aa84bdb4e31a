package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
)

// badInputRun runs the command line in process with no server: every case
// here must be rejected before any connection is made.
func badInputRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	// A closed port: a case that reaches the network fails differently.
	code, out, errOut := cmdline.Output(t, append([]string{"--nats", "nats://127.0.0.1:1", "--log-format", "json"}, args...)...)
	return code, out + errOut
}

// Bad flags and matrix files make `submit` exit 64 with a message naming
// the flag or field.
func TestSubmitBadInputExits64NamingTheField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	matrix := func(name, body string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "1"}
	with := func(extra ...string) []string { return append(append([]string{}, ok...), extra...) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no job", []string{"submit"}, "--matrix"},
		{"zero batch", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "0", "--loop-count", "1"}, "--batch-size"},
		{"negative batch", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "-3", "--loop-count", "1"}, "--batch-size"},
		{"huge batch", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1000000", "--loop-count", "1"}, "benchmark.batch_size"},
		{"batch not a number", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "eight", "--loop-count", "1"}, "batch-size"},
		{"zero loop", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "0"}, "--loop-count"},
		{"huge loop", []string{"submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "99999999"}, "benchmark.loop_count"},
		{"negative warmup", with("--warmup-count", "-1"), "--warmup-count"},
		{"unknown pool", []string{"submit", "--pool", "tpu", "--model", "m", "--batch-size", "1", "--loop-count", "1"}, "pool"},
		{"unknown runner", with("--runner", "bash"), "runner"},
		{"bad model", []string{"submit", "--pool", "sim", "--model", "../m", "--batch-size", "1", "--loop-count", "1"}, "benchmark.model"},
		{"bad data format", with("--data-format", "int8"), "benchmark.data_format"},
		{"bad input size", with("--input-size", "-1"), "benchmark.input_size"},
		{"forge test escaping", []string{"submit", "--pool", "n150", "--test", "../../x.py::t", "--model", "m", "--batch-size", "1", "--loop-count", "1"}, "benchmark.test"},
		{"forge without test", []string{"submit", "--pool", "n150", "--model", "m", "--batch-size", "1", "--loop-count", "1"}, "benchmark.test"},
		{"run traversal", with("--run", "../../etc"), "run"},
		{"run shell", with("--run", "r;rm -rf ~"), "run"},
		{"run substitution", with("--run", "$(reboot)"), "run"},
		{"label without value", with("--label", "k"), "--label"},
		{"label key escaping", with("--label", "../../k=v"), "labels"},
		{"label value newline", with("--label", "k=a\nb"), "labels.k"},
		{"bad priority", with("--priority", "urgent"), "--priority"},
		{"negative job timeout", with("--job-timeout", "-1s"), "--job-timeout"},
		{"huge job timeout", with("--job-timeout", "1000h"), "--job-timeout"},
		{"pcc over 1", with("--pcc-min", "2"), "--pcc-min"},
		{"bad timeout", with("--wait", "--timeout", "0s"), "--timeout"},
		{"gate without wait", with("--gate"), "--wait"},
		{"unknown flag", with("--bogus"), "bogus"},
		{"bad ack wait", with("--ack-wait", "1ms"), "--ack-wait"},
		{"bad max deliver", with("--max-deliver", "0"), "--max-deliver"},
		{"matrix and flags", []string{"submit", "--matrix", "x.yaml", "--pool", "sim"}, "--matrix"},
		{"matrix missing", []string{"submit", "--matrix", filepath.Join(dir, "nope.yaml")}, "--matrix"},
		{"matrix empty", []string{"submit", "--matrix", matrix("empty", "")}, "empty"},
		{"matrix not yaml", []string{"submit", "--matrix", matrix("garbage", "{[}")}, "--matrix"},
		{"matrix unknown key", []string{"submit", "--matrix", matrix("unknown", "defaults: {pool: sim}\nmatrx: {}\n")}, "matrx"},
		{"matrix unknown exclude key", []string{"submit", "--matrix", matrix("excl", "exclude: [{color: red}]\n")}, "color"},
		{"matrix negative batch", []string{"submit", "--matrix", matrix("negbatch",
			"defaults: {pool: sim, benchmark: {model: m, loop_count: 1}}\nmatrix: {batch_size: [-1]}\n")}, "benchmark.batch_size"},
		{"matrix bad run", []string{"submit", "--matrix", matrix("badrun",
			"run: ../x\ndefaults: {pool: sim, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n")}, "run"},
		{"matrix label escaping", []string{"submit", "--matrix", matrix("badlabel",
			"defaults: {pool: sim, labels: {'a/../../b': c}, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n")}, "labels"},
		{"matrix unknown pool", []string{"submit", "--matrix", matrix("badpool",
			"defaults: {benchmark: {model: m, batch_size: 1, loop_count: 1}}\nmatrix: {pool: [sim, tpu]}\n")}, "pool"},
		{"matrix bad timeout", []string{"submit", "--matrix", matrix("badtimeout",
			"defaults: {pool: sim, limits: {timeout: soon}, benchmark: {model: m, batch_size: 1, loop_count: 1}}\n")}, "limits.timeout"},
		{"matrix two docs", []string{"submit", "--matrix", matrix("twodocs", "run: a\n---\nrun: b\n")}, "one YAML document"},
		{"matrix huge", []string{"submit", "--matrix", matrix("huge", "run: a\n#"+strings.Repeat("x", 2<<20)+"\n")}, "1 MiB"},
		{"cancel bad run", []string{"runs", "cancel", "../x"}, "run"},
		{"dlq list bad format", []string{"dlq", "list", "--format", "xml"}, "--format"},
		{"dlq retry no id", []string{"dlq", "retry"}, "arg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := badInputRun(t, tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, cli.ExitUsage, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("message does not name %q:\n%s", tc.want, out)
			}
		})
	}
}
