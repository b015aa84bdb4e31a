package producer

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/protocol"
)

// WriteFleet writes sts as the table of `benchfleet fleet status`: a row
// per device (its state, job, failures over 24 hours, flag), then the
// counts and the results workers hold in their spools. Text from workers
// is escaped for a terminal.
func WriteFleet(w io.Writer, sts []protocol.WorkerStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tHOST\tVERSION\tDEVICE\tPOOL\tRUNNER\tSTATE\tJOB\tDONE\tFAILED 24H\tSEEN")
	idle, busy, quarantined := 0, 0, 0
	for _, st := range sts {
		worker := st.ID
		if st.Draining {
			worker += " (draining)"
		}
		for _, d := range st.Devices {
			state := d.State
			switch d.State {
			case protocol.DeviceIdle:
				idle++
			case protocol.DeviceBusy:
				busy++
			case protocol.DeviceQuarantined:
				quarantined++
				state += ": " + escape.Terminal(d.Reason)
			}
			fails := "-"
			if h := d.Health; h != nil {
				fails = fmt.Sprintf("%d/%d (%d hangs, %d resets)", h.Infra+h.Hangs, h.Jobs, h.Hangs, h.Resets)
			}
			if d.Flag != "" {
				state += " [FLAGGED: " + escape.Terminal(d.Flag) + "]"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s ago\n", worker, st.Host, st.Version, d.ID, d.Pool, d.Runner,
				state, d.Job, d.Done, fails, time.Since(st.Time).Truncate(time.Second))
		}
	}
	tw.Flush()
	workers := fmt.Sprintf("%d workers", len(sts))
	if len(sts) == 1 {
		workers = "1 worker"
	}
	devices := fmt.Sprintf("%d devices", idle+busy+quarantined)
	if idle+busy+quarantined == 1 {
		devices = "1 device"
	}
	fmt.Fprintf(w, "%s, %s: %d busy, %d idle, %d quarantined\n", workers, devices, busy, idle, quarantined)
	for _, st := range sts {
		if sp := st.Spool; sp != nil && sp.Entries > 0 {
			fmt.Fprintf(w, "worker %s: %d %s spooled in %s on %s, not in the store yet\n", st.ID, sp.Entries, plural(sp.Entries, "result", "results"), sp.Path, st.Host)
		}
	}
}
