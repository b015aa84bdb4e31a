package cli

import "github.com/spf13/cobra"

// benchDispatchCmd is being written.
func (a *app) benchDispatchCmd() *cobra.Command {
	return &cobra.Command{Use: "dispatch", Short: "(not built yet)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return usageErr("bench dispatch is not built yet") }}
}
