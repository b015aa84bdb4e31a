package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "List and re-queue dead-lettered jobs"}
	var format string
	list := &cobra.Command{
		Use: "list", Short: "List dead letters with their reason", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			ctx := cmd.Context()
			s, err := a.session(ctx, "benchfleet-dlq", 0)
			if err != nil {
				return err
			}
			defer s.close()
			entries, err := fleet.ReadDead(ctx, s.JS)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(a.stdout, entries)
			}
			return report.WriteDeadLetters(a.stdout, entries)
		},
	}
	list.Flags().StringVar(&format, "format", "table", "table or json")
	retry := &cobra.Command{
		Use: "retry ID", Short: "Re-queue a dead-lettered job under a fresh message id", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.session(ctx, "benchfleet-dlq", 0)
			if err != nil {
				return err
			}
			defer s.close()
			job, err := fleet.RetryDead(ctx, s.JS, args[0])
			switch {
			case errors.Is(err, fleet.ErrNoDeadLetter):
				return usageErr("no dead letter with id %q (see benchfleet dlq list)", args[0])
			case errors.Is(err, fleet.ErrDeadJobInvalid):
				return usageErr("dead letter %s cannot be re-queued: %v", args[0], err)
			case err != nil:
				return err
			}
			fmt.Fprintf(a.stdout, "job %s of run %s re-queued on %s\n", job.ID, job.Run, job.Queue.Subject())
			return nil
		},
	}
	cmd.AddCommand(list, retry)
	return cmd
}
