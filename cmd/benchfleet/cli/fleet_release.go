package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/worker/fleet"
)

func (a *app) fleetReleaseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "release WORKER DEVICE",
		Short: "Return a quarantined board to service",
		Long:  longHelp("fleet-release"),
		Example: `  benchfleet fleet status
  benchfleet fleet release tt-lab-07 tt0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.session(ctx, "benchfleet-fleet-release", withTopology)
			if err != nil {
				return err
			}
			defer s.close()
			h, err := fleet.ReleaseBoard(ctx, s.topo.Health, args[0], args[1])
			switch {
			case errors.Is(err, fleet.ErrUnknownBoard):
				return &exitError{code: ExitFailed, err: fmt.Errorf("%w (see benchfleet fleet status for worker and device names)", err)}
			case errors.Is(err, fleet.ErrNotQuarantined):
				fmt.Fprintf(a.stdout, "%s %s is not quarantined: nothing to release\n", args[0], args[1])
				return nil
			case err != nil:
				return err
			}
			fmt.Fprintf(a.stdout, "released %s %s (pool %s): the worker checks it and takes jobs on it again\n", h.Worker, h.Device, h.Pool)
			return nil
		},
	}
}
