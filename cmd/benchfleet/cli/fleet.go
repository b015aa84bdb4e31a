package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/worker/fleet"
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
				sts, err := fleet.ReadFleet(ctx, s.topo.Workers)
				if err != nil {
					return err
				}
				fleet.FlagBoards(sts)
				if format == "json" {
					if err := writeJSON(a.stdout, sts); err != nil {
						return err
					}
				} else {
					if watch && a.isTTY() {
						fmt.Fprint(a.stdout, "\033[H\033[2J")
					}
					report.WriteFleet(a.stdout, sts)
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
