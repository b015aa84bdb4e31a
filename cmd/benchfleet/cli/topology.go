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
		Long:  longHelp("topology-apply"),
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
			c, err := a.connect(ctx, "benchfleet-topology")
			if err != nil {
				return err
			}
			defer c.Close()
			actx, stop := topology.WatchRefusal(ctx, c.Conn)
			h, err := topology.Apply(actx, c.JS, tc)
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
				strings.Join(h.Streams(), ", "), len(protocol.AllQueues()), tc.AckWait,
				strings.Join(h.Buckets(), ", "), tc.Replicas)
			return nil
		},
	}
	a.queueFlags(apply)
	cmd.AddCommand(apply)
	return cmd
}
