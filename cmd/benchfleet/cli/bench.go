package cli

import "github.com/spf13/cobra"

func (a *app) benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure benchfleet itself (dispatch overhead, query speed, chaos)"}
	return cmd
}
