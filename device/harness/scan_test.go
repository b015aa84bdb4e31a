package harness

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
)

type nopRecorder struct{}

func (nopRecorder) Phase(string)            {}
func (nopRecorder) Log(string)              {}
func (nopRecorder) Artifact(string, string) {}

func scanLines(lines ...string) *Scan {
	sc := newScanner(nopRecorder{}, time.Now(), time.Now, 0)
	sc.run(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	return sc
}

// The accuracy lines each harness prints (harnesstest/trees names the upstream files):
// forge's pass line without the PCC it required, tt-xla's with it (the
// lowest when several outputs are checked), and the failed checks' texts
// inside pytest's assertion report.
func TestScanReadsEachHarnessAccuracyLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		lines        []string
		value, req   float64
		ok           bool
		failV, failR float64
		failOK       bool
	}{
		{name: "forge pass", lines: []string{"PCC verification passed with PCC=0.998765"}, value: 0.998765, ok: true},
		{name: "tt-xla pass", lines: []string{"PCC check: Calculated PCC=0.950000, Required PCC=0.90"}, value: 0.95, req: 0.90, ok: true},
		{name: "tt-xla multi-output, worst kept", lines: []string{
			"PCC check: Overall PCC=0.991000, Min scale PCC=0.980000, Required PCC=0.97",
			"PCC check: Calculated PCC=0.975000, Required PCC=0.97",
		}, value: 0.975, req: 0.97, ok: true},
		{name: "not at line start", lines: []string{"echo PCC check: Calculated PCC=1.0, Required PCC=0.1"}},
		{name: "forge failure", lines: []string{"E       AssertionError: Golden comparison failed (compare_with_golden). PCC=0.410000, required=0.99"},
			failV: 0.41, failR: 0.99, failOK: true},
		{name: "tt-xla failure", lines: []string{"E   AssertionError: PCC comparison failed. PCC=0.5, Required=0.9"},
			failV: 0.5, failR: 0.9, failOK: true},
		{name: "tt-xla utils.py failure", lines: []string{"E   AssertionError: PCC comparison failed. Calculated: pcc=0.500000. Required: pcc=0.9"},
			failV: 0.5, failR: 0.9, failOK: true},
		{name: "tt-xla multi-output failure", lines: []string{"E   AssertionError: PCC comparison failed. Overall PCC=0.600000, Min scale PCC=0.400000. Required: pcc=0.97"},
			failV: 0.6, failR: 0.97, failOK: true},
		{name: "tt-xla both lines", lines: []string{"PCC check: Calculated PCC=0.950000, Required PCC=0.9", "PCC verification passed with PCC=0.950000"},
			value: 0.95, req: 0.9, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scanLines(tc.lines...)
			v, req, ok := sc.PCC()
			if v != tc.value || req != tc.req || ok != tc.ok {
				t.Errorf("PCC() = %v, %v, %v; want %v, %v, %v", v, req, ok, tc.value, tc.req, tc.ok)
			}
			fv, fr, fok := sc.FailedPCC()
			if fv != tc.failV || fr != tc.failR || fok != tc.failOK {
				t.Errorf("FailedPCC() = %v, %v, %v; want %v, %v, %v", fv, fr, fok, tc.failV, tc.failR, tc.failOK)
			}
		})
	}
}

// How pytest ended, as the real pytest prints it,
// decides whose fault it is.
func TestClassifyBlamesTheHostForImportErrors(t *testing.T) {
	t.Parallel()
	isHost := func(err error) bool { _, ok := err.(*device.HostError); return ok }
	for _, tc := range []struct {
		name  string
		code  int
		lines []string
		want  func(error) bool
		what  string
	}{
		{"conftest import", 4, []string{"ImportError while loading conftest '/c/forge/test/conftest.py'.", "ModuleNotFoundError: No module named 'forge'"}, isHost, "host"},
		{"test module import, pytest 7", 4, []string{
			"ImportError while importing test module '/c/tests/benchmark/test_vision.py'.",
			"E   ModuleNotFoundError: No module named 'torch_xla'",
			"ERROR: not found: /c/tests/benchmark/test_vision.py::test_resnet50",
		}, isHost, "host"},
		{"test module import, pytest 8", 4, []string{
			"ImportError while importing test module '/c/tests/benchmark/test_vision.py'.",
			"ERROR: found no collectors for /c/tests/benchmark/test_vision.py::test_resnet50",
		}, isHost, "host"},
		{"id not found", 4, []string{"ERROR: not found: /c/tests/benchmark/test_vision.py::test_nope", "(no name '/c/tests/benchmark/test_vision.py::test_nope' in any of [<Module test_vision.py>])"}, device.IsInvalid, "invalid"},
		{"usage error", 4, []string{"ERROR: Invalid value for --batch-size: '0'. Must be a positive integer (> 0)."}, device.IsInvalid, "invalid"},
		{"nothing selected", 5, []string{"collected 1 item / 1 deselected / 0 selected"}, device.IsInvalid, "invalid"},
		{"test failed", 1, []string{"E   AssertionError: PCC comparison failed. PCC=0.5, Required=0.9"}, device.IsBenchmark, "benchmark failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify("tt-xla", "tests/benchmark/test_vision.py::test_resnet50", tc.code, 0, scanLines(tc.lines...), fs.ErrNotExist)
			if err == nil || !tc.want(err) {
				t.Fatalf("classify = %v, want a %s error", err, tc.what)
			}
		})
	}
	// A failed check keeps the harness's figures.
	err := classify("tt-xla", "t.py::x", 1, 0, scanLines("E   AssertionError: PCC comparison failed. PCC=0.5, Required=0.9"), fs.ErrNotExist)
	var be *device.BenchmarkError
	if !errors.As(err, &be) || be.PCC != 0.5 || be.PCCRequired != 0.9 {
		t.Fatalf("classify = %#v, want a benchmark error with PCC 0.5 of 0.9", err)
	}
	// SIGABRT is the upstream watchdog: a hang.
	if err := classify("forge", "t.py::x", -1, syscall.SIGABRT, scanLines("Fatal Python error: Aborted"), fs.ErrNotExist); !device.IsHang(err) {
		t.Fatalf("SIGABRT: %v, want a hang", err)
	}
}

// A harness that ends by any other signal or by an exit code that is not
// a verdict of pytest's (os._exit(3) looks like pytest's internal error)
// crashed by its own doing: a *device.JobError (the worker then checks the
// board before it blames it), never a hang or an infrastructure failure.
func TestClassifyCrashesAreTheJobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		code  int
		sig   syscall.Signal
		lines []string
		want  string
	}{
		{"os._exit(3)", 3, 0, []string{"about to crash"}, "status 3"},
		{"pytest internal error", 3, 0, []string{"INTERNALERROR> Traceback (most recent call last):"}, "status 3"},
		{"collection error", 2, 0, []string{"E   SyntaxError: invalid syntax", "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!"}, "interrupted (exit 2"},
		{"an exit code pytest never gives", 42, 0, nil, "status 42, which pytest never gives"},
		{"segfault", -1, syscall.SIGSEGV, []string{"Fatal Python error: Segmentation fault"}, "signal 11 (segmentation fault)"},
		{"its own SIGKILL", -1, syscall.SIGKILL, nil, "signal 9 (killed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify("forge", "t.py::x", tc.code, tc.sig, scanLines(tc.lines...), fs.ErrNotExist)
			var je *device.JobError
			if !errors.As(err, &je) || je.Limit != "" || device.IsHang(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("classify = %#v, want a crash (*device.JobError without a limit) naming %q", err, tc.want)
			}
		})
	}
}
