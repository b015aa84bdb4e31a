package runstate

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadManifest is matched (errors.Is) by a *BadManifestError.
var ErrBadManifest = errors.New("bad manifest")

// BadManifestError is a bench-runs manifest that a reader refuses: it does
// not decode, names another run, or its counts are out of bounds. Readers
// of many runs skip it with a warning; a reader of one run fails.
type BadManifestError struct {
	Run string
	Err error
}

func (e *BadManifestError) Error() string {
	return fmt.Sprintf("run %s: bad manifest in bench-runs: %v", e.Run, e.Err)
}

// Unwrap returns the reason.
func (e *BadManifestError) Unwrap() error { return e.Err }

// Is makes the error match ErrBadManifest.
func (e *BadManifestError) Is(target error) bool { return target == ErrBadManifest }

// SkippedRunsError is returned by ListRuns beside the runs it could read:
// the runs whose manifest it skipped and why. The list is complete without
// them; callers show it as a warning.
type SkippedRunsError struct {
	Errs []error
}

func (e *SkippedRunsError) Error() string {
	msgs := make([]string, 0, min(len(e.Errs), 5))
	for _, err := range e.Errs[:min(len(e.Errs), 5)] {
		msgs = append(msgs, err.Error())
	}
	if len(e.Errs) > 5 {
		msgs = append(msgs, fmt.Sprintf("and %d more", len(e.Errs)-5))
	}
	return fmt.Sprintf("%d run(s) skipped: %s", len(e.Errs), strings.Join(msgs, "; "))
}
