package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
)

// queueEnv is the environment variable of each queue tuning flag
// (topologyFlags).
var queueEnv = map[string]string{
	"ack-wait": "BENCHFLEET_ACK_WAIT",
	"replicas": "BENCHFLEET_REPLICAS",
}

// givenQueueFlag says how a queue tuning flag was given to cmd: "--ack-wait
// 10s", "BENCHFLEET_ACK_WAIT=10s", or "" when neither was (its default).
func givenQueueFlag(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		return ""
	}
	if f.Changed {
		return "--" + name + " " + f.Value.String()
	}
	if env := queueEnv[name]; os.Getenv(env) != "" {
		return env + "=" + os.Getenv(env)
	}
	return ""
}

// warnTopologyDrift warns on stderr about each of --ack-wait and --replicas
// given to cmd that the live topology does not have: cmd (submit, worker)
// created only what was missing and used the rest as it is, so the flag
// did nothing there. Only `topology apply` changes it. pools limits the
// consumers compared (those cmd uses). A failed comparison is logged, not
// an error.
func (a *app) warnTopologyDrift(ctx context.Context, cmd *cobra.Command, js topology.Inspector, tc topology.Config, pools []string) {
	given := map[string]string{}
	var settings []string
	for _, s := range []string{topology.SettingAckWait, topology.SettingReplicas} {
		if g := givenQueueFlag(cmd, s); g != "" {
			given[s] = g
			settings = append(settings, s)
		}
	}
	if len(given) == 0 {
		return
	}
	drifts, err := topology.Drifts(ctx, js, tc, pools, settings...)
	if err != nil {
		a.log.Debug().Err(err).Msg("could not compare the queue flags with the live topology")
		return
	}
	for _, d := range drifts {
		also := ""
		if d.More > 0 {
			also = fmt.Sprintf(" (and %d more)", d.More)
		}
		fmt.Fprintf(a.stderr, "benchfleet: warning: %s has no effect: the live %s has %s %s%s; %s only creates what is missing and never changes it — "+
			"change it with `benchfleet topology apply --%s %s` (as the admin user on deploy/nats)\n",
			given[d.Setting], d.Object, d.Setting, d.Live, also, cmd.Name(), d.Setting, d.Want)
	}
}
