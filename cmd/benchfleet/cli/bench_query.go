package cli

import "github.com/spf13/cobra"

// benchQueryCmd is being written.
func (a *app) benchQueryCmd() *cobra.Command {
	return &cobra.Command{Use: "query", Short: "(not built yet)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return usageErr("bench query is not built yet") }}
}
