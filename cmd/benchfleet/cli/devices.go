package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/worker"
)

// deviceJSON is the JSON shape of `benchfleet devices`, which scripts read.
type deviceJSON struct {
	ID      string `json:"id"`
	Pool    string `json:"pool"`
	Arch    string `json:"arch"`
	Chips   int    `json:"chips"`
	Path    string `json:"path"`
	Healthy bool   `json:"healthy"`
	// JobUser is the user a harness slot runs its jobs as (absent for
	// built-in slots).
	JobUser string `json:"job_user,omitempty"`
}

func (a *app) devicesCmd() *cobra.Command {
	var config, slots, format string
	cmd := &cobra.Command{
		Use:   "devices [--config FILE] [--slots cpu=2]",
		Short: "Show the devices this host would serve",
		Args:  cobra.NoArgs,
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
			// Listing devices needs no checkout: no runner is built.
			ss, err := worker.PlanSlots(cmd.Context(), wf, slots, a.log)
			if err != nil {
				return configUsage(err)
			}
			// The job user harness slots would run their jobs as.
			var user string
			for _, s := range ss {
				if k, ok := device.Lookup(s.Device.Runner); ok && k.Harness {
					if user, err = wf.JobUser(); err != nil {
						return configUsage(err)
					}
					break
				}
			}
			out := []deviceJSON{}
			for _, s := range ss {
				d := s.Device
				healthy := d.Healthy
				if s.Health != nil {
					healthy = healthy && s.Health.Check(cmd.Context(), d) == nil
				}
				dj := deviceJSON{ID: d.ID, Pool: d.Pool, Arch: d.Arch, Chips: d.Chips, Path: d.Path, Healthy: healthy}
				if k, ok := device.Lookup(d.Runner); ok && k.Harness {
					dj.JobUser = user
				}
				out = append(out, dj)
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
			if user != "" {
				fmt.Fprintf(a.stdout, "\nharness jobs run as %s\n", user)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "worker config YAML (slots and discovery)")
	cmd.Flags().StringVar(&slots, "slots", "", "built-in slots pool=count[,pool=count]")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	return cmd
}
