package runstate

import "github.com/nats-io/nats.go/jetstream"

// ErrUnknownRun is what the error of GetManifest, CancelRun and
// Submitter.Manifest Is when bench-runs has no such run. It is
// jetstream.ErrKeyNotFound, named here for callers that do not use
// JetStream themselves.
var ErrUnknownRun = jetstream.ErrKeyNotFound
