package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker/process"
)

func (a *app) spoolCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "spool", Short: "Look after a worker's local spool of results"}
	var timeout time.Duration
	drain := &cobra.Command{
		Use:     "drain DIR",
		Short:   "Upload the results waiting in a spool folder to the store, then exit",
		Long:    longHelp("spool-drain"),
		Example: `  benchfleet spool drain /var/lib/benchfleet/spool-old --store s3://bench-results/farm?region=us-east-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if st, err := os.Stat(filepath.Join(dir, "ready")); err != nil || !st.IsDir() {
				return usageErr("%s is not a spool folder (no ready/ in it)", dir)
			}
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs // as the spool names itself
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			bucket, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			defer bucket.Close()
			rep, err := process.DrainSpool(ctx, dir, bucket, a.log)
			var oe *process.OptionError
			if errors.As(err, &oe) {
				return usageErr("spool %v", oe.Err)
			} else if err != nil && rep == (spool.DrainReport{}) {
				return err
			}
			fmt.Fprintf(a.stdout, "spool %s: %s delivered to the store", dir, count(rep.Delivered, "result"))
			if rep.Failed > 0 {
				fmt.Fprintf(a.stdout, ", %d undeliverable (moved to %s)", rep.Failed, filepath.Join(dir, "failed"))
			}
			if rep.Left > 0 || err != nil {
				fmt.Fprintf(a.stdout, ", %d left\n", rep.Left)
				return &exitError{code: ExitFailed, err: fmt.Errorf("spool %s: %d result(s) not delivered: %w; run it again when the store answers", dir, rep.Left, err)}
			}
			fmt.Fprintln(a.stdout, "; the spool is empty")
			return nil
		},
	}
	drain.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "give up after this long")
	cmd.AddCommand(drain)
	return cmd
}
