package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
)

func (a *app) fleetCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "fleet", Short: "See the workers of the farm and their devices"}
	var format string
	var watch bool
	var interval time.Duration
	status := &cobra.Command{
		Use: "status", Short: "Show every live worker and the state of its devices", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			s, err := a.session(ctx, "benchfleet-fleet", withTopology)
			if err != nil {
				return err
			}
			defer s.close()
			for {
				sts, err := producer.ReadFleet(ctx, s.topo.Workers)
				if err != nil {
					return err
				}
				producer.FlagBoards(sts)
				if format == "json" {
					if err := writeJSON(a.stdout, sts); err != nil {
						return err
					}
				} else {
					if watch && a.isTTY() {
						fmt.Fprint(a.stdout, "\033[H\033[2J")
					}
					writeFleet(a.stdout, sts)
				}
				if !watch {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	status.Flags().StringVar(&format, "format", "table", "table or json (an array of WorkerStatus documents)")
	status.Flags().BoolVar(&watch, "watch", false, "refresh until interrupted")
	status.Flags().DurationVar(&interval, "interval", 2*time.Second, "with --watch: refresh interval")
	cmd.AddCommand(status, a.fleetReleaseCmd())
	return cmd
}

func writeFleet(w interface{ Write([]byte) (int, error) }, sts []protocol.WorkerStatus) {
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
			fmt.Fprintf(w, "worker %s: %s spooled in %s on %s, not in the store yet\n", st.ID, count(sp.Entries, "result"), sp.Path, st.Host)
		}
	}
}
