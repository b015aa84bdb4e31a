// Package watch follows a run to its end: its events and its jobs' stored
// results (Watcher.Wait), results that do not arrive, store and NATS
// outages ridden out with a deadline on each call, the pools' service
// while waiting (ServiceWatch), and the runs listed for readers
// (ListRuns, ReadQueues).
package watch
