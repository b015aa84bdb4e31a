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
	best, bestD := "", 0
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editdist.Distance(name, f.Name)
		// Close: a typo or two, and not most of the name (--x is not --xy's typo).
		if d > 2 || d*2 >= len(f.Name) {
			return
		}
		if best == "" || d < bestD || (d == bestD && f.Name < best) {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}
