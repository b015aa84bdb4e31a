// Package fleet reads the farm's state as producers, the dashboard and
// the worker's start check see it: workers' heartbeats (ReadFleet,
// CheckWorkerID), boards flagged and released, dead letters (ReadDead,
// RetryDead), and the bounded JetStream reads they are made of
// (ReadStored, GetKey, CallTimeout). It imports nothing of the producer
// side, so a worker process links none of it.
package fleet
