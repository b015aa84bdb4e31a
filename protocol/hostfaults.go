package protocol

import (
	"slices"
	"time"
)

// SchemaHostFaults is the schema of a JobHostFaults document.
const SchemaHostFaults = "benchfleet.host-faults/v1"

// HostFaultsKeyPrefix starts the bench-health keys of JobHostFaults
// records. A worker id starts with a letter or digit (ValidID), so these
// keys never meet a board's (HealthKey: "<worker>.<device>").
const HostFaultsKeyPrefix = "_hostfaults."

// HostFaultsKey is the bench-health key of job's JobHostFaults record.
func HostFaultsKey(job string) string { return HostFaultsKeyPrefix + job }

// JobHostFaults is the lasting record, one per unfinished job in the
// bench-health bucket (HostFaultsKey), of the hosts (worker ids) on which
// the job said its host cannot run the harness, and of the deliveries
// those hosts handed back without running it. Every worker reads it when
// the job is delivered again: a host named in it never runs the job again,
// and the deliveries it accounts for (Excused) do not count against
// MaxDeliver, whichever worker counts. The worker that records the job's
// result or dead letter removes it.
type JobHostFaults struct {
	Schema string `json:"schema"`
	Job    string `json:"job"`
	Run    string `json:"run,omitempty"`
	Pool   string `json:"pool"`
	Runner string `json:"runner"`
	// Hosts are the hosts that ran the job and said they cannot run the
	// harness, by worker id; each ran it once.
	Hosts map[string]HostFault `json:"hosts"`
	// Passes are the deliveries a host of Hosts handed back unrun.
	Passes int `json:"passes,omitempty"`
}

// HostFault is one host's report on a job.
type HostFault struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
	// Confirmed is set when the host's own check confirmed the fault (its
	// health probe failed, or its board check): the host left service and
	// the report says nothing against the job.
	Confirmed bool `json:"confirmed,omitempty"`
}

// Excused is how many of the job's deliveries the record accounts for:
// one per host fault and one per pass.
func (h *JobHostFaults) Excused() int {
	if h == nil {
		return 0
	}
	return len(h.Hosts) + h.Passes
}

// Has reports whether host said it cannot run the job's harness.
func (h *JobHostFaults) Has(host string) bool {
	if h == nil {
		return false
	}
	_, ok := h.Hosts[host]
	return ok
}

// Unconfirmed are the hosts, sorted, whose report no check of their own
// confirmed: those that speak against the job.
func (h *JobHostFaults) Unconfirmed() []string {
	if h == nil {
		return nil
	}
	var out []string
	for id, f := range h.Hosts {
		if !f.Confirmed {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
