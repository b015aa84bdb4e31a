package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/protocol"
)

// Settings of Config that Ensure leaves as they are on existing objects.
const (
	SettingAckWait  = "ack-wait"
	SettingReplicas = "replicas"
)

// Difference is a setting whose live value on one object differs from the
// one a Config asks for: Ensure used the object as it is, and only Apply
// changes it.
type Difference struct {
	// Setting is SettingAckWait or SettingReplicas.
	Setting string
	// Object names what holds the live value: "consumer jobs-sim-normal",
	// "stream BENCH_JOBS", "bucket bench-runs".
	Object string
	// Live and Want are the values as the flags write them ("1m0s", "3").
	Live, Want string
}

// Inspector is what Diff reads of JetStream (a jetstream.JetStream is
// one).
type Inspector interface {
	Stream(ctx context.Context, stream string) (jetstream.Stream, error)
	Consumer(ctx context.Context, stream, consumer string) (jetstream.Consumer, error)
}

// Diff compares the live topology with c (defaults filled): the replicas
// of every stream and bucket, and the ack wait of the job consumers of
// pools (every pool when pools is empty). Objects that do not exist are
// skipped. It needs only info rights (a producer's or worker's).
func Diff(ctx context.Context, js Inspector, c Config, pools []string) ([]Difference, error) {
	c = c.WithDefaults()
	ctx, cancel := withDefaultTimeout(ctx, c.Timeout)
	defer cancel()
	var out []Difference
	want := strconv.Itoa(c.Replicas)
	streams := []struct{ object, name string }{
		{"stream " + protocol.StreamJobs, protocol.StreamJobs},
		{"stream " + protocol.StreamUntrusted, protocol.StreamUntrusted},
		{"stream " + protocol.StreamEvents, protocol.StreamEvents},
		{"stream " + protocol.StreamDead, protocol.StreamDead},
		{"bucket " + protocol.BucketWorkers, "KV_" + protocol.BucketWorkers},
		{"bucket " + protocol.BucketRuns, "KV_" + protocol.BucketRuns},
		{"bucket " + protocol.BucketHealth, "KV_" + protocol.BucketHealth},
	}
	for _, s := range streams {
		st, err := js.Stream(ctx, s.name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("topology: %s: %w", s.object, err)
		}
		if r := st.CachedInfo().Config.Replicas; r != c.Replicas {
			out = append(out, Difference{Setting: SettingReplicas, Object: s.object, Live: strconv.Itoa(r), Want: want})
		}
	}
	if len(pools) == 0 {
		pools = protocol.Pools
	}
	for _, pool := range pools {
		for _, q := range protocol.PoolQueues(pool) {
			name := q.Consumer()
			cons, err := js.Consumer(ctx, q.Stream(), name)
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("topology: consumer %s: %w", name, err)
			}
			if aw := cons.CachedInfo().Config.AckWait; aw != c.AckWait {
				out = append(out, Difference{Setting: SettingAckWait, Object: "consumer " + name, Live: aw.String(), Want: c.AckWait.String()})
			}
		}
	}
	return out, nil
}

// Drift is a setting, given to a command that only creates what is
// missing, that the live topology does not have: the first object that
// differs, and how many more do.
type Drift struct {
	Difference
	More int
}

// Drifts is Diff for the settings given (SettingAckWait, SettingReplicas),
// one Drift per setting that differs anywhere, in the order Diff finds
// them.
func Drifts(ctx context.Context, js Inspector, c Config, pools []string, settings ...string) ([]Drift, error) {
	diffs, err := Diff(ctx, js, c, pools)
	if err != nil {
		return nil, err
	}
	var out []Drift
	at := map[string]int{}
	for _, d := range diffs {
		if !slices.Contains(settings, d.Setting) {
			continue
		}
		if i, ok := at[d.Setting]; ok {
			out[i].More++
			continue
		}
		at[d.Setting] = len(out)
		out = append(out, Drift{Difference: d})
	}
	return out, nil
}
