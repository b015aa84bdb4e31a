package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/worker"
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
func (a *app) warnTopologyDrift(ctx context.Context, cmd *cobra.Command, js jetstream.JetStream, tc topology.Config, pools []string) {
	given := map[string]string{}
	for _, s := range []string{topology.SettingAckWait, topology.SettingReplicas} {
		if g := givenQueueFlag(cmd, s); g != "" {
			given[s] = g
		}
	}
	if len(given) == 0 {
		return
	}
	diffs, err := topology.Diff(ctx, js, tc, pools)
	if err != nil {
		a.log.Debug().Err(err).Msg("could not compare the queue flags with the live topology")
		return
	}
	first, more := map[string]topology.Difference{}, map[string]int{}
	var order []string
	for _, d := range diffs {
		if given[d.Setting] == "" {
			continue
		}
		if _, ok := first[d.Setting]; ok {
			more[d.Setting]++
			continue
		}
		first[d.Setting] = d
		order = append(order, d.Setting)
	}
	for _, s := range order {
		d := first[s]
		also := ""
		if n := more[s]; n > 0 {
			also = fmt.Sprintf(" (and %d more)", n)
		}
		fmt.Fprintf(a.stderr, "benchfleet: warning: %s has no effect: the live %s has %s %s%s; %s only creates what is missing and never changes it — "+
			"change it with `benchfleet topology apply --%s %s` (as the admin user on deploy/nats)\n",
			given[s], d.Object, s, d.Live, also, cmd.Name(), s, d.Want)
	}
}

// submissionPools lists the pools of sub's jobs, each once.
func submissionPools(sub *producer.Submission) []string {
	seen := map[string]bool{}
	var out []string
	for _, j := range sub.Jobs {
		if !seen[j.Pool] {
			seen[j.Pool] = true
			out = append(out, j.Pool)
		}
	}
	return out
}

// slotPools lists the pools of a worker's slots, each once.
func slotPools(slots []worker.Slot) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range slots {
		if !seen[s.Device.Pool] {
			seen[s.Device.Pool] = true
			out = append(out, s.Device.Pool)
		}
	}
	return out
}
