package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

func (a *app) devicesCmd() *cobra.Command {
	var config, slots, format string
	cmd := &cobra.Command{
		Use:   "devices [--config FILE] [--slots cpu=2]",
		Short: "Show the devices this host would serve, and the walls of the box harness jobs run in",
		Long:  longHelp("devices"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			var wf *configfile.File
			if config != "" {
				var err error
				if wf, err = configfile.Load(config); err != nil {
					return configUsage(err)
				}
			}
			out, boxes, err := configfile.ReportDevices(cmd.Context(), wf, slots, a.log)
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
				fmt.Fprintf(a.stdout, "\nharness jobs run as %s\n", boxes[0].User)
			}
			for _, b := range boxes {
				fmt.Fprintf(a.stdout, "%s walls: %s\n", b.Runner, box.WallsLine(b.Walls))
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
