package cli

import "github.com/spf13/cobra"

// benchChaosCmd is being written.
func (a *app) benchChaosCmd() *cobra.Command {
	return &cobra.Command{Use: "chaos", Short: "(not built yet)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return usageErr("bench chaos is not built yet") }}
}
