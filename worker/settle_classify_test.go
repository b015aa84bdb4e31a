package worker

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/spool"
)

func TestClassifyRun(t *testing.T) {
	t.Parallel()
	timedOut := errors.New("job timed out after 1s")
	out := &device.Outcome{}
	for _, tc := range []struct {
		name     string
		out      *device.Outcome
		runErr   error
		cause    error
		stopping bool
		want     runClass
		hang     bool   // the error to act on is a hang
		msg      string // and its message contains this
	}{
		{name: "passed", out: out, want: runMeasured},
		{name: "no outcome and no error", want: runInfra, msg: "runner returned no outcome"},
		{name: "stopping hard wins over any outcome", out: out, runErr: device.Failed("x"), stopping: true, want: runStopped},
		{name: "stopping hard wins over a cancel", cause: errRunCancelled, stopping: true, want: runStopped},
		{name: "run cancelled", runErr: context.Canceled, cause: errRunCancelled, want: runCancelled},
		{name: "run cancelled after an outcome", out: out, cause: errRunCancelled, want: runCancelled},
		{name: "invalid", runErr: device.Invalid("bad batch"), want: runInvalid, msg: "bad batch"},
		{name: "invalid, wrapped", runErr: fmt.Errorf("run: %w", device.Invalid("bad")), want: runInvalid},
		{name: "benchmark failure", out: out, runErr: device.Failed("pcc"), want: runBenchmark},
		{name: "timeout is a hang", runErr: context.DeadlineExceeded, cause: timedOut, want: runInfra, hang: true, msg: "timed out after 1s"},
		{name: "deadline without the job's timeout is plain infra", runErr: context.DeadlineExceeded, want: runInfra},
		{name: "invalid beats a timeout", runErr: fmt.Errorf("%w: %w", device.Invalid("x"), context.DeadlineExceeded), cause: timedOut, want: runInvalid},
		{name: "host fault", runErr: device.HostFault("no python"), want: runHostFault},
		{name: "host fault that timed out is a hang", runErr: fmt.Errorf("%w: %w", device.HostFault("x"), context.DeadlineExceeded), cause: timedOut, want: runInfra, hang: true},
		{name: "the job's own crash", runErr: device.JobFault("", "exit 3"), want: runJobFault, msg: "exit 3"},
		{name: "a box limit, wrapped", runErr: fmt.Errorf("run: %w", device.JobFault(device.LimitPids, "fork bomb")), want: runJobFault, msg: "pids limit"},
		{name: "a crash that timed out is a hang", runErr: fmt.Errorf("%w: %w", device.JobFault("", "x"), context.DeadlineExceeded), cause: timedOut, want: runInfra, hang: true},
		{name: "infra", runErr: device.Infra("crashed"), want: runInfra, msg: "crashed"},
		{name: "setup", runErr: device.SetupFailed("no wheel"), want: runInfra, msg: "no wheel"},
		{name: "untyped error is infra", runErr: errors.New("boom"), want: runInfra, msg: "boom"},
		{name: "the store did not serve a wheel", runErr: &device.InfraError{Err: fmt.Errorf("forge: %w", device.StoreDown("wheel x: nothing for 30s")), Setup: true},
			want: runStoreDown, msg: "nothing for 30s"},
		{name: "a store outage that timed out is a hang", runErr: fmt.Errorf("%w: %w", device.StoreDown("x"), context.DeadlineExceeded), cause: timedOut, want: runInfra, hang: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := classifyRun(tc.out, tc.runErr, tc.cause, tc.stopping)
			if got != tc.want {
				t.Fatalf("class %d, want %d", got, tc.want)
			}
			if device.IsHang(err) != tc.hang {
				t.Errorf("hang %v, want %v (%v)", device.IsHang(err), tc.hang, err)
			}
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Errorf("error %v, want one saying %q", err, tc.msg)
			}
			if quiet := got == runStopped || got == runCancelled || got == runMeasured; quiet != (err == nil) {
				t.Errorf("class %d with error %v", got, err)
			}
		})
	}
}

func TestClassifyDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		stopping bool
		want     action
	}{
		{name: "durable", want: actAck},
		{name: "durable while stopping: the ack still goes", stopping: true, want: actAck},
		{name: "recorded by an earlier attempt", err: fmt.Errorf("put: %w", storage.ErrExists), want: actAck},
		{name: "recorded earlier, while stopping", err: storage.ErrExists, stopping: true, want: actAck},
		{name: "stopping hard", err: errors.New("context canceled"), stopping: true, want: actHandBack},
		{name: "stopping hard beats unrecordable", err: spool.ErrRefused, stopping: true, want: actHandBack},
		{name: "spool refuses", err: fmt.Errorf("spool: %w", spool.ErrRefused), want: actUnrecordable},
		{name: "store down, no spool", err: fmt.Errorf("put: %w", storage.ErrUnavailable), want: actUnrecordable},
		{name: "any other failure", err: errors.New("disk on fire"), want: actRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyDelivery(tc.err, tc.stopping); got != tc.want {
				t.Fatalf("classifyDelivery(%v, %v) = %d, want %d", tc.err, tc.stopping, got, tc.want)
			}
		})
	}
}

func TestRetryOrDead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		counted, max int
		want         action
	}{
		{1, 4, actRetry}, {3, 4, actRetry}, {4, 4, actDead}, {5, 4, actDead}, {1, 1, actDead}, {0, 1, actRetry},
	} {
		if got := retryOrDead(tc.counted, tc.max); got != tc.want {
			t.Errorf("retryOrDead(%d, %d) = %d, want %d", tc.counted, tc.max, got, tc.want)
		}
	}
}

// A confirmation repeat that avoids boards has its first avoidPasses
// deliveries taken for passes: none counts against MaxDeliver. A job that
// avoids none, or is no repeat (only repeats are passed on), has none.
func TestPassesAreNotCounted(t *testing.T) {
	t.Parallel()
	w := []string{"w/d"}
	for _, tc := range []struct {
		repeat     int
		avoid      []string
		deliveries int
		excused    int
		want       int // counted
	}{
		{0, nil, 1, 0, 1}, {0, nil, 4, 0, 4}, {0, nil, 4, 1, 3}, {1, nil, 4, 0, 4},
		{1, w, 1, 0, 1}, {1, w, 2, 0, 1}, {1, w, 4, 0, 1}, {2, w, 5, 0, 2}, {1, w, 6, 1, 2},
		{0, w, 2, 0, 2}, {0, w, 4, 0, 4}, {0, w, 6, 1, 5},
	} {
		a := &attemptState{job: &protocol.Job{Repeat: tc.repeat, Avoid: tc.avoid}, deliveries: tc.deliveries, excused: tc.excused}
		if got := a.counted(); got != tc.want {
			t.Errorf("repeat %d avoid %v, delivery %d, %d excused: counted %d, want %d", tc.repeat, tc.avoid, tc.deliveries, tc.excused, got, tc.want)
		}
	}
}

// A reason cut for TermWithReason or a dead letter stays valid UTF-8.
func TestTruncateCutsOnARuneBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 200, "short"},
		{"abcdef", 3, "abc"},
		{"ééé", 3, "é"},  // é is 2 bytes: the 2nd would be cut in half
		{"ééé", 4, "éé"}, // on a boundary
		{"a€b", 3, "a"},  // € is 3 bytes
		{"a€b", 4, "a€"}, // whole
		{"€", 2, ""},     // nothing whole fits
		{"x🎉y", 4, "x"},  // 4-byte rune
		{"x🎉y", 5, "x🎉"}, // whole
	} {
		got := truncate(tc.s, tc.n)
		if got != tc.want || !utf8.ValidString(got) || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	long := strings.Repeat("é", 150) // 300 bytes
	if got := truncate(long, 200); !utf8.ValidString(got) || len(got) != 200 {
		t.Errorf("truncate of 150 é to 200 bytes: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := truncate("é"+strings.Repeat("x", 199)+"é", 200); !utf8.ValidString(got) || len(got) != 200 {
		t.Errorf("cut before a trailing rune: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := truncate(strings.Repeat("x", 199)+"é", 200); !utf8.ValidString(got) || len(got) != 199 {
		t.Errorf("cut through a trailing rune: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

// No function, method, parameter or variable of the package is named after
// a builtin (recover, close, len, ...): such a name shadows it where it is
// in scope and misleads where it is not.
func TestNoNameShadowsABuiltin(t *testing.T) {
	t.Parallel()
	builtin := map[string]bool{}
	for _, n := range types.Universe.Names() {
		if _, ok := types.Universe.Lookup(n).(*types.Builtin); ok {
			builtin[n] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(id *ast.Ident) {
			if id != nil && builtin[id.Name] {
				t.Errorf("%s: %q shadows the builtin", fset.Position(id.Pos()), id.Name)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				check(n.Name)
			case *ast.Field:
				for _, id := range n.Names {
					check(id)
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					check(id)
				}
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, e := range n.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							check(id)
						}
					}
				}
			}
			return true
		})
	}
}
