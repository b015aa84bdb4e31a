package topology

import "github.com/nats-io/nats.go/jetstream"

// Streams names the topology's streams (jobs, the untrusted producer's
// jobs, events, dead letters), as the handles have them.
func (h *Handles) Streams() []string {
	var out []string
	for _, s := range []jetstream.Stream{h.Jobs, h.Untrusted, h.Events, h.Dead} {
		if s != nil {
			out = append(out, s.CachedInfo().Config.Name)
		}
	}
	return out
}

// Buckets names the topology's KV buckets (workers, runs, health), as the
// handles have them.
func (h *Handles) Buckets() []string {
	var out []string
	for _, kv := range []jetstream.KeyValue{h.Workers, h.Runs, h.Health} {
		if kv != nil {
			out = append(out, kv.Bucket())
		}
	}
	return out
}
