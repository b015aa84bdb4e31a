// Package runstate is a run's jobs as they go: each job's state from its
// events and stored result (JobState), the run's progress (Progress), the
// rows every view prints and judges (Row, Rows) with their attempts, the
// manifest read from bench-runs (GetManifest), and the formatting every
// view shares (FmtRate, ShortCommit, Count).
package runstate
