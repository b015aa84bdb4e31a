package protocol

import "time"

// SchemaHealth is the schema of a DeviceHealth document.
const SchemaHealth = "benchfleet.health/v1"

// Health event kinds of a board's history.
const (
	HealthPass       = "pass"       // a job ended without an infrastructure failure
	HealthInfra      = "infra"      // an infrastructure failure (crash, device gone)
	HealthHang       = "hang"       // a hang or timeout
	HealthReset      = "reset"      // the board was reset (tt-smi -r)
	HealthQuarantine = "quarantine" // the board left service
	HealthRelease    = "release"    // an operator returned it (fleet release)
	HealthJob        = "job"        // the job failed by its own doing (crash, box limit); the board passed its check after
)

// MaxHealthEvents bounds a board's history: the oldest events go first.
const MaxHealthEvents = 256

// HealthWindow is the window failure counts and rates are given over.
const HealthWindow = 24 * time.Hour

// DeviceHealth is a Tenstorrent board's lasting health, one key per board
// in the bench-health bucket (HealthKey): whether it is quarantined (which
// survives a worker restart until an operator releases it) and its recent
// history.
type DeviceHealth struct {
	Schema string `json:"schema"`
	Worker string `json:"worker"`
	Device string `json:"device"`
	Pool   string `json:"pool"`
	// Quarantined boards take no jobs, also after a restart, until
	// `benchfleet fleet release WORKER DEVICE`.
	Quarantined bool      `json:"quarantined"`
	Reason      string    `json:"reason,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	// Events is the history, oldest first, at most MaxHealthEvents.
	Events []HealthEvent `json:"events,omitempty"`
}

// HealthEvent is one entry of a board's history.
type HealthEvent struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Job is the job it happened on, if any.
	Job string `json:"job,omitempty"`
}

// HealthCounts are a board's outcomes over a window.
type HealthCounts struct {
	// Window is the length of the window in seconds.
	WindowS float64 `json:"window_s"`
	Jobs    int     `json:"jobs"`
	Infra   int     `json:"infra"`
	Hangs   int     `json:"hangs"`
	Resets  int     `json:"resets"`
	// FailureRate is (infra + hangs) / jobs; 0 without jobs.
	FailureRate float64 `json:"failure_rate"`
}

// HealthKey is the bench-health key of a worker's device.
func HealthKey(worker, device string) string { return worker + "." + device }

// Record appends an event, keeping at most MaxHealthEvents.
func (h *DeviceHealth) Record(e HealthEvent) {
	h.Events = append(h.Events, e)
	if n := len(h.Events) - MaxHealthEvents; n > 0 {
		h.Events = append(h.Events[:0:0], h.Events[n:]...)
	}
}

// Counts returns the outcomes since since.
func (h *DeviceHealth) Counts(now time.Time, window time.Duration) HealthCounts {
	c := HealthCounts{WindowS: window.Seconds()}
	since := now.Add(-window)
	for _, e := range h.Events {
		if e.Time.Before(since) {
			continue
		}
		switch e.Kind {
		case HealthPass, HealthJob:
			c.Jobs++
		case HealthInfra:
			c.Jobs++
			c.Infra++
		case HealthHang:
			c.Jobs++
			c.Hangs++
		case HealthReset:
			c.Resets++
		}
	}
	if c.Jobs > 0 {
		c.FailureRate = float64(c.Infra+c.Hangs) / float64(c.Jobs)
	}
	return c
}
