package protocol

import (
	"encoding/json"
	"time"
)

// EventKind says what happened to a job.
type EventKind string

// The event kinds.
const (
	EventQueued    EventKind = "queued"
	EventClaimed   EventKind = "claimed"
	EventPhase     EventKind = "phase"
	EventLog       EventKind = "log"
	EventPassed    EventKind = "passed"
	EventFailed    EventKind = "failed"
	EventRetrying  EventKind = "retrying"
	EventCancelled EventKind = "cancelled"
	EventDead      EventKind = "dead"
)

// Terminal reports whether the kind ends a job: no further events follow
// for it (a dead job may be re-queued by hand, which starts it again).
func (k EventKind) Terminal() bool {
	return k == EventPassed || k == EventFailed || k == EventCancelled || k == EventDead
}

// Event is a status or progress message on bench.events.<run>.<job>.
type Event struct {
	Schema  string    `json:"schema"`
	Run     string    `json:"run"`
	Job     string    `json:"job"`
	Time    time.Time `json:"time"`
	Kind    EventKind `json:"kind"`
	Pool    string    `json:"pool,omitempty"`
	Phase   string    `json:"phase,omitempty"`
	Worker  string    `json:"worker,omitempty"`
	Device  string    `json:"device,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Message string    `json:"message,omitempty"`
	// Status is the result's status on terminal events.
	Status Status `json:"status,omitempty"`
	// Result is the storage key of the result, on terminal events.
	Result string `json:"result,omitempty"`
	// ResultSpooled is set on a terminal event whose result the worker
	// spooled locally (the store did not take it): the job is over and
	// acked, and its result reaches the store when the spool uploads it.
	ResultSpooled bool `json:"spooled,omitempty"`
	// SamplesPerSec and PCC summarize a result on terminal events.
	SamplesPerSec float64 `json:"samples_per_sec,omitempty"`
	PCC           float64 `json:"pcc,omitempty"`
}

// DecodeEvent decodes an event (unknown fields tolerated).
func DecodeEvent(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, &decodeError{kind: "event", err: err}
	}
	return &e, nil
}

// WorkerStatus is a worker's heartbeat, kept in the bench-workers bucket
// under the worker id with a TTL.
type WorkerStatus struct {
	Schema  string `json:"schema"`
	ID      string `json:"id"`
	Host    string `json:"host"`
	Version string `json:"version"`
	// Revision is the commit the worker was built from, as in
	// WorkerRef.Revision; absent when unknown.
	Revision  string    `json:"revision,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Time      time.Time `json:"time"`
	Draining  bool      `json:"draining,omitempty"`
	// Store says what is wrong with the worker's result store, e.g.
	// "store not answering since 2025-06-01T12:00:03Z (...); results are
	// spooled locally (3 pending)", or that it cannot record results at all
	// and claims nothing until it can. Absent: the store answered its last
	// call.
	Store string `json:"store,omitempty"`
	// Spool is the worker's local spool of results waiting for the store;
	// absent when the worker runs without one.
	Spool *SpoolStatus `json:"spool,omitempty"`
	// PID is the worker's process id on Host; absent (0) from workers
	// that do not report it. A worker starting on the same host tells its
	// dead predecessor's record (that process is gone) from a live twin.
	PID     int            `json:"pid,omitempty"`
	Devices []DeviceStatus `json:"devices"`
	// Lost is set by readers (fleet.ReadFleet), never by the worker:
	// its heartbeat is older than WorkerStaleAfter (killed, hung or cut
	// off), so its record shows what it was doing when it was last heard
	// of. A worker that stops cleanly removes its record instead.
	Lost bool `json:"lost,omitempty"`
}

// Device states in a WorkerStatus.
const (
	DeviceIdle        = "idle"
	DeviceBusy        = "busy"
	DeviceQuarantined = "quarantined"
)

// DeviceStatus is one slot of a worker.
type DeviceStatus struct {
	ID     string `json:"id"`
	Pool   string `json:"pool"`
	Runner string `json:"runner"`
	Arch   string `json:"arch,omitempty"`
	Chips  int    `json:"chips,omitempty"`
	State  string `json:"state"`
	Job    string `json:"job,omitempty"`
	Run    string `json:"run,omitempty"`
	Reason string `json:"reason,omitempty"`
	Done   int64  `json:"done"`
	// Health is the board's outcomes over the last HealthWindow (Tenstorrent
	// boards only).
	Health *HealthCounts `json:"health,omitempty"`
	// Flag says why this board looks worse than its pool (set by readers
	// comparing the fleet, e.g. `fleet status`), empty when it does not.
	Flag string `json:"flag,omitempty"`
}

// RunManifest records what was submitted in a run (bench-runs bucket and
// runs/<run>/manifest.json in storage).
type RunManifest struct {
	Schema    string            `json:"schema"`
	Run       string            `json:"run"`
	CreatedAt time.Time         `json:"created_at"`
	Submitter string            `json:"submitter"`
	Source    Source            `json:"source,omitzero"`
	Priority  Priority          `json:"priority"`
	Jobs      []ManifestJob     `json:"jobs"`
	Labels    map[string]string `json:"labels,omitempty"`
	// JobCount is the number of jobs; set (with Chunks) only on the header
	// of a chunked manifest in bench-runs, absent otherwise.
	JobCount int `json:"job_count,omitempty"`
	// Chunks is how many ManifestChunkKey values hold the jobs of a run of
	// more than ManifestChunkJobs jobs; 0 (absent) = the jobs are inline.
	Chunks int `json:"chunks,omitempty"`
}

// ManifestJob is one job of a run, enough to display and wait for it.
type ManifestJob struct {
	ID         string `json:"id"`
	Pool       string `json:"pool"`
	Runner     string `json:"runner"`
	Model      string `json:"model"`
	Test       string `json:"test,omitempty"`
	BatchSize  int    `json:"batch_size"`
	DataFormat string `json:"data_format"`
	// Cell is the job's Cell() text, so a re-submit can say what differs;
	// absent in manifests written before it was added.
	Cell string `json:"cell,omitempty"`
	// Repeat and Of mark a confirmation repeat (Job.Repeat 1..MaxRepeat)
	// of the run's job Of, added by the regression gate; absent (0, "")
	// for the run's own jobs. A repeat is an attempt of Of's row, not a
	// row of its own.
	Repeat int    `json:"repeat,omitempty"`
	Of     string `json:"of,omitempty"`
}

// DeadLetter is a job that will not be run again without a deliberate retry.
type DeadLetter struct {
	Schema   string    `json:"schema"`
	ID       string    `json:"id"`
	Run      string    `json:"run,omitempty"`
	Pool     string    `json:"pool"`
	Priority Priority  `json:"priority,omitempty"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Time     time.Time `json:"time"`
	Worker   string    `json:"worker,omitempty"`
	// Trust is "untrusted" when the job was claimed from StreamUntrusted
	// (set by the worker from where it claimed it; absent: StreamJobs).
	// `dlq retry` re-queues the job to the stream it came from.
	Trust Trust `json:"trust,omitempty"`
	// Payload is the original message, kept even when it could not be
	// parsed; of a payload over MaxJobBytes only the first
	// DeadPayloadPrefix bytes (the reason then gives its size and sha256).
	Payload []byte `json:"payload"`
}
