package cli

import "github.com/spf13/cobra"

// benchCmd groups the commands that measure benchfleet itself. Each
// subcommand lives in its own bench_*.go file.
func (a *app) benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure benchfleet itself: dispatch overhead, query speed, chaos"}
	cmd.AddCommand(a.benchDispatchCmd(), a.benchQueryCmd(), a.benchChaosCmd())
	return cmd
}
