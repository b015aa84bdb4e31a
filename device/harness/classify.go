package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/box"
)

// pytest exit codes (pytest.ExitCode).
const (
	exitTestsFailed  = 1
	exitInterrupted  = 2
	exitInternal     = 3
	exitUsageError   = 4
	exitNoTestsFound = 5
)

// classify turns how the harness ended into nil (passed, with a report to
// read) or the typed error the worker dispatches on. It decides from what
// pytest printed, not the exit code alone:
//
//   - a signal: SIGABRT is the upstream watchdog aborting a hung test, a
//     hang (the board is reset); any other signal is a crash of the job's
//     own interpreter (a *device.JobError: the worker checks the board and
//     blames it only when the check or the probe fails);
//   - exit 4 is pytest's usage error, but it is also how pytest reports a
//     conftest that cannot be imported (a missing forge wheel or driver
//     library: the host is broken, not the job), a test module that cannot
//     be imported (for a file::name id pytest prints "ImportError while
//     importing test module" and then "ERROR: not found" (pytest 7) or
//     "ERROR: found no collectors" (pytest 8): a missing torch_xla or
//     submodule, the host again) and a node id that is not found (the
//     job's fault);
//   - exit 5: nothing collected, e.g. the id is deselected by the marker
//     expression (the job's fault);
//   - exit 2 with a test module that cannot be imported is the host's
//     environment too; other exit 2 (a collection error, an interrupt),
//     exit 3 (pytest's internal error, or the job's own os._exit(3): the
//     two look alike) and any exit code pytest never gives are the job's
//     own crash (*device.JobError, as for a signal);
//   - exit 1 is a failed test (a PCC assertion, training): a benchmark
//     failure;
//   - exit 0 without a report is a benchmark failure (nothing measured).
func classify(name, test string, code int, sig syscall.Signal, sc *Scan, reportErr error) error {
	sc.mu.Lock()
	conftest, moduleErr, notFound := sc.conftest, sc.moduleErr, sc.notFound
	sc.mu.Unlock()
	tail := tailSuffix(sc.Tail())
	switch {
	case sig == syscall.SIGABRT:
		return device.Hang("%s: harness aborted by SIGABRT (the upstream watchdog aborts a hung test)%s", name, tail)
	case sig != 0:
		return device.JobFault("", "%s: harness killed by signal %d (%s)%s", name, int(sig), sig, tail)
	case code == exitUsageError && conftest != "":
		return device.HostFault("%s: %s (pytest exit 4: the harness's environment on this host is broken)%s", name, conftest, tail)
	case code == exitUsageError && moduleErr != "":
		return device.HostFault("%s: %s (pytest exit 4: the test module cannot be imported in the harness's environment on this host)%s", name, moduleErr, tail)
	case code == exitUsageError && notFound != "":
		return device.Invalid("test %q not found in the %s checkout (pytest exit 4): %s", test, name, notFound)
	case code == exitUsageError:
		return device.Invalid("pytest usage error (exit 4)%s", tail)
	case code == exitNoTestsFound:
		return device.Invalid("pytest ran no test for %q (exit 5: not collected, or deselected by the perf marker)%s", test, tail)
	case code == exitInterrupted && moduleErr != "":
		return device.HostFault("%s: %s (pytest exit 2: the harness's environment on this host is broken)%s", name, moduleErr, tail)
	case code == exitInterrupted:
		return device.JobFault("", "%s: pytest was interrupted (exit 2: a collection error or an interrupt)%s", name, tail)
	case code == exitInternal:
		return device.JobFault("", "%s: harness exited with status 3 (pytest's internal error, or the test's own exit)%s", name, tail)
	case code == exitTestsFailed:
		what := "no report"
		if reportErr == nil {
			what = "although it wrote a report"
		}
		err := &device.BenchmarkError{Reason: fmt.Sprintf("test failed (pytest exit 1, %s)%s", what, tail)}
		if v, req, ok := sc.FailedPCC(); ok {
			err.PCC, err.PCCRequired = v, req
			err.Reason = fmt.Sprintf("PCC %g is below the %g the harness requires (pytest exit 1, %s)%s", v, req, what, tail)
		}
		return err
	case code != 0:
		return device.JobFault("", "%s: harness exited with status %d, which pytest never gives%s", name, code, tail)
	case errors.Is(reportErr, fs.ErrNotExist):
		return device.Failed("harness exited 0 but wrote no report (test skipped?)%s", tail)
	case isRefused(reportErr):
		return device.Failed("the harness's report is refused: %v", reportErr)
	case reportErr != nil:
		return device.Infra("%s: read report: %v", name, reportErr)
	}
	return nil
}

func tailSuffix(tail string) string {
	if tail == "" {
		return "; the log is empty"
	}
	return "; log tail:\n" + tail
}

// isRefused reports whether err is box's refusal of a file the harness
// left (a link, not a regular file, too large): the harness's fault.
func isRefused(err error) bool {
	var fe *box.FileError
	return errors.As(err, &fe)
}
