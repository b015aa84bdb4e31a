package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/internal/editdist"
)

// flagHint is what follows cobra's "unknown flag: --modle": the closest
// flag of cmd (its own and the inherited ones), as " (did you mean
// --model?)", or "" when no flag is close.
func flagHint(cmd *cobra.Command, err error) string {
	_, name, ok := strings.Cut(err.Error(), "unknown flag: --")
	if !ok || name == "" {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	best := editdist.Closest(name, names)
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}
