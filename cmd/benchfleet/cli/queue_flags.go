package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/topology"
)

// topologyFlags adds the queue tuning flags of commands that create the
// topology and run a worker (worker, dev, demo).
func (a *app) topologyFlags(cmd *cobra.Command) {
	a.consumerFlags(cmd)
	f := cmd.Flags()
	f.IntVar(&a.maxDeliver, "max-deliver", a.envInt("BENCHFLEET_MAX_DELIVER", 4), "deliveries of a job before the worker dead-letters it; a worker setting (env BENCHFLEET_MAX_DELIVER)")
	f.DurationVar(&a.heartbeat, "heartbeat", a.envDuration("BENCHFLEET_HEARTBEAT", 0), "in-progress interval while a job runs, a worker setting; default a third of --ack-wait (env BENCHFLEET_HEARTBEAT)")
}

// queueFlags adds the queue tuning flags of commands that create the
// topology but run no worker (submit, topology apply). --max-deliver and
// --heartbeat, settings of each worker, are hidden there and refused
// (refuseWorkerFlags); their environment variables are the worker's.
func (a *app) queueFlags(cmd *cobra.Command) {
	a.consumerFlags(cmd)
	f := cmd.Flags()
	f.IntVar(&a.maxDeliver, "max-deliver", 4, "not taken: a worker setting")
	f.DurationVar(&a.heartbeat, "heartbeat", 0, "not taken: a worker setting")
	_ = f.MarkHidden("max-deliver")
	_ = f.MarkHidden("heartbeat")
}

func (a *app) consumerFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&a.ackWait, "ack-wait", a.envDuration("BENCHFLEET_ACK_WAIT", topology.DefaultAckWait), "redeliver a claimed job after this long without a heartbeat; set on the job consumers when created, changed only by topology apply (env BENCHFLEET_ACK_WAIT)")
	f.IntVar(&a.replicas, "replicas", a.envInt("BENCHFLEET_REPLICAS", 1), "replicas of streams and buckets (3 on a cluster); set when created, changed only by topology apply (env BENCHFLEET_REPLICAS)")
}

// refuseWorkerFlags is a usage error for --max-deliver or --heartbeat given
// to a command that runs no worker (queueFlags): each is a setting of the
// worker that claims the job, which the job consumers do not hold.
func refuseWorkerFlags(cmd *cobra.Command) error {
	for _, fl := range []struct{ name, env, what string }{
		{"max-deliver", "BENCHFLEET_MAX_DELIVER", "the worker that claims a job counts its deliveries, up to its own --max-deliver"},
		{"heartbeat", "BENCHFLEET_HEARTBEAT", "it is the in-progress interval of the worker running a job"},
	} {
		if cmd.Flags().Changed(fl.name) {
			return usageErr("--%s is a worker setting, not taken by %s: %s; give it to `benchfleet worker` (or dev, demo), or set %s where the worker runs",
				fl.name, cmd.CommandPath(), fl.what, fl.env)
		}
	}
	return nil
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
