package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/gate"
)

func (a *app) resultsAcceptCmd() *cobra.Command {
	var (
		o  gate.AcceptOptions
		gf gateFlags
	)
	cmd := &cobra.Command{
		Use:   "accept SERIES --at COMMIT --reason TEXT",
		Short: "Accept a series' open regression as its new level (a write-once record in the store)",
		Long:  longHelp("results-accept"),
		Example: `  benchfleet results accept resnet50/n150/bs8/bfloat16 --at 9f8e7d6c5b4a \
      --reason "bfloat16 accumulation fix: 3% slower, agreed in tt-forge#1234"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Gate, err = gf.config(); err != nil {
				return err
			}
			b, err := a.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			o.Series = args[0]
			open, err := gate.AcceptOpen(cmd.Context(), b, a.historyFrom(b), o)
			if errors.Is(err, gate.ErrBadAccept) {
				return usageErr("%v", err)
			} else if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, open.Text())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Commit, "at", "", "the step's first commit, as its open regression names it (a unique prefix will do)")
	fl.StringVar(&o.Reason, "reason", "", "why the new level is accepted (required; shown wherever the regression is listed)")
	fl.StringVar(&o.By, "by", "", "who accepts it (default $GITHUB_ACTOR or $USER, @ this host)")
	fl.StringVar(&o.Test, "test", "", "the series' test, when several series share the name")
	fl.StringVar(&o.Runner, "runner", "", "the series' runner, when several series share the name")
	gf.register(fl)
	return cmd
}
