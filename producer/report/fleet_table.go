package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// WriteFleet writes sts as the table of `benchfleet fleet status`: a row
// per device (its state, job, failures over 24 hours, flag), then the
// counts and the results workers hold in their spools. A lost worker
// (WorkerStatus.Lost: its heartbeat lapsed) shows as LOST with the jobs of
// its last heartbeat, and its devices count as lost, not busy or idle.
// Text from workers is escaped for a terminal.
func WriteFleet(w io.Writer, sts []protocol.WorkerStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tHOST\tVERSION\tDEVICE\tPOOL\tRUNNER\tSTATE\tJOB\tDONE\tFAILED 24H\tSEEN")
	idle, busy, quarantined, lost := 0, 0, 0, 0
	for _, st := range sts {
		worker := st.ID
		switch {
		case st.Lost:
			worker += " (LOST: no heartbeat)"
		case st.Draining:
			worker += " (draining)"
		}
		for _, d := range st.Devices {
			state := d.State
			switch {
			case st.Lost:
				lost++
				state = "lost (was " + d.State + ")"
			case d.State == protocol.DeviceIdle:
				idle++
			case d.State == protocol.DeviceBusy:
				busy++
			case d.State == protocol.DeviceQuarantined:
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s ago\n", worker, st.Host, escape.Terminal(WorkerVersion(st)), d.ID, d.Pool, d.Runner,
				state, d.Job, d.Done, fails, time.Since(st.Time).Truncate(time.Second))
		}
	}
	tw.Flush()
	workers := fmt.Sprintf("%d workers", len(sts))
	if len(sts) == 1 {
		workers = "1 worker"
	}
	devices := fmt.Sprintf("%d devices", idle+busy+quarantined+lost)
	if idle+busy+quarantined+lost == 1 {
		devices = "1 device"
	}
	fmt.Fprintf(w, "%s, %s: %d busy, %d idle, %d quarantined", workers, devices, busy, idle, quarantined)
	if lost > 0 {
		fmt.Fprintf(w, ", %d lost", lost)
	}
	fmt.Fprintln(w)
	for _, st := range sts {
		if st.Lost {
			var jobs []string
			for _, d := range st.Devices {
				if d.Job != "" {
					jobs = append(jobs, d.Job+" of "+d.Run)
				}
			}
			what := "no job"
			if len(jobs) > 0 {
				what = "jobs " + strings.Join(jobs, ", ") + " (redelivered after the ack wait)"
			}
			fmt.Fprintf(w, "worker %s on %s is lost: no heartbeat since %s; it was running %s\n", st.ID, st.Host, st.Time.UTC().Format(time.RFC3339), escape.Terminal(what))
		}
		if sp := st.Spool; sp != nil && sp.Entries > 0 {
			fmt.Fprintf(w, "worker %s: %d %s spooled in %s on %s, not in the store yet\n", st.ID, sp.Entries, runstate.Plural(sp.Entries, "result", "results"), sp.Path, st.Host)
		}
	}
}

// WorkerVersion is a worker's version as views print it: its module
// version and the first 12 characters of its revision, "+" when built
// with local changes ("v1.4.0 (2aca758aaed7)"); the version alone when
// the worker does not report a revision.
func WorkerVersion(st protocol.WorkerStatus) string {
	rev, modified := strings.CutSuffix(st.Revision, "+modified")
	if rev == "" {
		return st.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "+"
	}
	return st.Version + " (" + rev + ")"
}
