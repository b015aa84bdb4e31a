// Package fault is the end-to-end suite of the delivery contract with real
// parts: the real benchfleet binary as worker subprocesses killed with
// SIGKILL, a three-node nats-server cluster losing its stream leader, a
// worker drained and stopped by signals, and `benchfleet bench chaos`.
// It has no code of its own; the tests are the proofs.
package fault
