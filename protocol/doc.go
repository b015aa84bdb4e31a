// Package protocol holds benchfleet's wire types and names: the Job, Result,
// Event, WorkerStatus and RunManifest documents, their schema versions,
// strict decoding and validation, deterministic job ids, and every NATS
// subject, stream, consumer and bucket name.
//
// protocol is the leaf of the module: every other package may import it and
// it imports none of ours.
package protocol
