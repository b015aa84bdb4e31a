package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
)

// topologyFlags adds the queue tuning flags of commands that create the
// topology.
func (a *app) topologyFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&a.ackWait, "ack-wait", a.envDuration("BENCHFLEET_ACK_WAIT", topology.DefaultAckWait), "redeliver a claimed job after this long without a heartbeat; set on the job consumers when created, changed only by topology apply (env BENCHFLEET_ACK_WAIT)")
	f.IntVar(&a.maxDeliver, "max-deliver", a.envInt("BENCHFLEET_MAX_DELIVER", 4), "deliveries of a job before the worker dead-letters it; a worker setting (env BENCHFLEET_MAX_DELIVER)")
	f.DurationVar(&a.heartbeat, "heartbeat", a.envDuration("BENCHFLEET_HEARTBEAT", 0), "in-progress interval while a job runs, a worker setting; default a third of --ack-wait (env BENCHFLEET_HEARTBEAT)")
	f.IntVar(&a.replicas, "replicas", a.envInt("BENCHFLEET_REPLICAS", 1), "replicas of streams and buckets (3 on a cluster); set when created, changed only by topology apply (env BENCHFLEET_REPLICAS)")
}

func (a *app) topologyConfig() (topology.Config, error) {
	if a.ackWait < time.Second {
		return topology.Config{}, usageErr("--ack-wait %s: must be at least 1s", a.ackWait)
	}
	if a.maxDeliver < 1 || a.maxDeliver > 100 {
		return topology.Config{}, usageErr("--max-deliver %d: must be between 1 and 100", a.maxDeliver)
	}
	if a.heartbeat < 0 || (a.heartbeat > 0 && a.heartbeat >= a.ackWait) {
		return topology.Config{}, usageErr("--heartbeat %s: must be shorter than --ack-wait %s", a.heartbeat, a.ackWait)
	}
	if a.replicas < 1 || a.replicas > 5 {
		return topology.Config{}, usageErr("--replicas %d: must be between 1 and 5", a.replicas)
	}
	return topology.Config{AckWait: a.ackWait, Replicas: a.replicas, Log: a.log}, nil
}

// queueEnv is the environment variable of each queue tuning flag
// (topologyFlags).
var queueEnv = map[string]string{
	"ack-wait":    "BENCHFLEET_ACK_WAIT",
	"replicas":    "BENCHFLEET_REPLICAS",
	"max-deliver": "BENCHFLEET_MAX_DELIVER",
	"heartbeat":   "BENCHFLEET_HEARTBEAT",
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

// warnWorkerOnlyFlags warns on stderr about --max-deliver and --heartbeat
// given to a command that runs no worker (submit, topology apply): both
// are the settings of each worker, which the job consumers do not hold.
func (a *app) warnWorkerOnlyFlags(cmd *cobra.Command) {
	if g := givenQueueFlag(cmd, "max-deliver"); g != "" {
		fmt.Fprintf(a.stderr, "benchfleet: warning: %s has no effect on %s: the worker that claims a job counts its deliveries, up to that worker's "+
			"--max-deliver (BENCHFLEET_MAX_DELIVER where the worker runs; default 4); the job consumers do not hold it, so neither submit nor "+
			"`benchfleet topology apply` changes it\n", g, cmd.Name())
	}
	if g := givenQueueFlag(cmd, "heartbeat"); g != "" {
		fmt.Fprintf(a.stderr, "benchfleet: warning: %s has no effect on %s: it is each worker's in-progress interval (`benchfleet worker --heartbeat`, "+
			"BENCHFLEET_HEARTBEAT where the worker runs)\n", g, cmd.Name())
	}
}
