package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

func (a *app) topologyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "topology", Short: "Create or change the NATS streams, consumers and buckets (operators)"}
	apply := &cobra.Command{
		Use:   "apply",
		Short: "Create or update every stream, consumer and bucket to the given settings",
		Long: `Create or update benchfleet's JetStream topology (BENCH_JOBS, BENCH_EVENTS,
BENCH_DEAD, the job consumers, the bench-workers, bench-runs and
bench-health buckets) to the queue tuning flags given (--ack-wait, --replicas;
--max-deliver and --heartbeat are each worker's settings, not taken here).

Producers (submit) and workers only create what is missing and never change
what exists, so on deploy/nats their users have no update rights: run this
as the admin user once after installing, and again to change a setting
(e.g. --ack-wait or --replicas).`,
		Example: `  NATS_PASSWORD_FILE=/etc/benchfleet/admin.password benchfleet topology apply --nats tls://nats-1:4222 \
      --tls-ca ca.pem --user admin --inbox-prefix _INBOX_admin --replicas 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := refuseWorkerFlags(cmd); err != nil {
				return err
			}
			tc, err := a.topologyConfig()
			if err != nil {
				return err
			}
			nc, js, err := a.connect(ctx, "benchfleet-topology")
			if err != nil {
				return err
			}
			defer nc.Close()
			actx, stop := topology.WatchRefusal(ctx, nc)
			h, err := topology.Apply(actx, js, tc)
			cause := context.Cause(actx)
			stop()
			if errors.Is(cause, topology.ErrNotAdmin) {
				return a.notAdminErr(cause)
			}
			if err != nil {
				return err
			}
			tc = tc.WithDefaults()
			// Every stream and bucket Apply made, as its handles name them.
			fmt.Fprintf(a.stdout, "topology applied: streams %s; %d job consumers (ack wait %s); buckets %s; replicas %d\n",
				strings.Join(h.Streams(), ", "), len(protocol.Pools)*len(protocol.Priorities), tc.AckWait,
				strings.Join(h.Buckets(), ", "), tc.Replicas)
			return nil
		},
	}
	a.queueFlags(apply)
	cmd.AddCommand(apply)
	return cmd
}
