package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/worker"
)

func (a *app) devicesCmd() *cobra.Command {
	var config, slots, format string
	cmd := &cobra.Command{
		Use:   "devices [--config FILE] [--slots cpu=2]",
		Short: "Show the devices this host would serve, and the walls of the box harness jobs run in",
		Long: `Show the devices this host would serve: built-in slots (--slots, the
config's slots) and Tenstorrent boards (the config's static slots and
discovery), each with its health.

For each harness runner of those slots it also builds, as this process
can on this host, the box that runner's jobs run in (the config's
isolation section; docs/OPERATIONS.md, "The box every harness job runs
in") and lists its walls (mount, pid, network, devices, uid, pids,
memory, cpu, disk): up, or down with why. Run it as the worker runs
(root) to see the worker's walls. The JSON output adds job_user and
walls ([{name, up, chosen, detail}]) to each harness slot's entry.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			var wf *worker.File
			if config != "" {
				var err error
				if wf, err = worker.LoadFile(config); err != nil {
					return configUsage(err)
				}
			}
			out, boxes, err := worker.ReportDevices(cmd.Context(), wf, slots, a.log)
			if err != nil {
				return configUsage(err)
			}
			if format == "json" {
				return writeJSON(a.stdout, out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPOOL\tARCH\tCHIPS\tPATH\tHEALTHY")
			for _, d := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%t\n", d.ID, d.Pool, d.Arch, d.Chips, d.Path, d.Healthy)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(boxes) > 0 {
				// Every harness shares the job user; only the network
				// may differ between their boxes.
				fmt.Fprintf(a.stdout, "\nharness jobs run as %s\n", boxes[0].User)
			}
			for _, b := range boxes {
				fmt.Fprintf(a.stdout, "%s walls: %s\n", b.Runner, wallsLine(b.Walls))
				if b.Refused {
					fmt.Fprintf(a.stdout, "%s: a worker with this config would not start: a wall is down and isolation.walls is require (install what the wall needs, or set isolation.walls: warn)\n", b.Runner)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "worker config YAML (slots and discovery)")
	cmd.Flags().StringVar(&slots, "slots", "", "built-in slots pool=count[,pool=count]")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	return cmd
}

// wallsLine is a box's walls on one line: those up, then those down with
// why ("by choice" for one the config took down), walls down for the same
// reason named together.
func wallsLine(walls []box.Wall) string {
	var up []string
	type reason struct {
		why   string
		names []string
	}
	var down []*reason
	byWhy := map[string]*reason{}
	for _, w := range walls {
		if w.Up {
			up = append(up, w.Name)
			continue
		}
		why := w.Detail
		if w.Chosen {
			why = "by choice: " + why
		}
		r := byWhy[why]
		if r == nil {
			r = &reason{why: why}
			byWhy[why] = r
			down = append(down, r)
		}
		r.names = append(r.names, w.Name)
	}
	s := "up: none"
	if len(up) > 0 {
		s = "up: " + strings.Join(up, " ")
	}
	for i, r := range down {
		sep := "; "
		if i == 0 {
			sep = "; down: "
		}
		s += sep + strings.Join(r.names, " ") + " (" + r.why + ")"
	}
	return s
}
