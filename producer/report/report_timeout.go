package report

import (
	"fmt"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"io"
	"time"
)

// WriteTimedOut ends the report of a wait that timed out (p its run's
// progress then): the warnings said while waiting, then what was left
// unfinished.
func WriteTimedOut(w io.Writer, warnings []string, timeout time.Duration, p runstate.Progress) {
	for _, note := range warnings {
		fmt.Fprintf(w, "\nwarning: %s", note)
	}
	fmt.Fprintf(w, "\ntimed out after %s waiting for run %s: %s unfinished; the run goes on\n", timeout, p.Run, runstate.Count(p.Unfinished(), "job"))
}
