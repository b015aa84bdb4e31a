// Package producer is the submitting side of benchfleet: it expands matrix
// files into jobs, submits a run idempotently (deterministic job ids sent
// with Nats-Msg-Id, re-attaching to a run already in bench-runs), waits for
// a run through its events with progress, and summarizes the outcome as a
// table, JUnit and Markdown.
package producer
