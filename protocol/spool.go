package protocol

import (
	"strings"
	"time"
)

// SpoolStatus is a worker's local spool in its heartbeat (WorkerStatus).
type SpoolStatus struct {
	// Path is the spool directory on the worker's host, absolute.
	Path string `json:"path"`
	// Entries is how many results the spool holds that are not in the
	// store yet (0: none).
	Entries int `json:"entries"`
}

// SpooledNote ends the message of a terminal event whose result the worker
// spooled locally because the store did not take it: the job is over and
// acked, and its result reaches the store when the spool uploads it.
const SpooledNote = "(result spooled locally; upload pending)"

// Spooled reports whether e is a terminal event whose result was spooled
// on its worker: ResultSpooled, or, from a worker older than that field,
// a message ending with SpooledNote.
func (e *Event) Spooled() bool {
	return e.Kind.Terminal() && (e.ResultSpooled || strings.HasSuffix(e.Message, SpooledNote))
}

// WorkerStaleAfter is how old a worker's heartbeat may be while the worker
// is taken for alive: a worker writes its status at least every 10 s, so
// one silent this long has missed two in a row (killed, hung or cut off).
// Its record stays in bench-workers until the bucket's TTL (an hour)
// removes it; readers list it as lost meanwhile (WorkerStatus.Lost).
const WorkerStaleAfter = 25 * time.Second

// Live reports whether the heartbeat is fresh at now (not older than
// WorkerStaleAfter).
func (s *WorkerStatus) Live(now time.Time) bool {
	return !s.Time.IsZero() && now.Sub(s.Time) <= WorkerStaleAfter
}
