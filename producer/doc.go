// Package producer is the side of benchfleet that submits runs and reads
// them back. It holds no code of its own: each responsibility is a
// package below it, and the arrows point down (a package imports only
// those listed after it here, and the worker side imports none of them).
//
//   - bisect: the commit that made a series slower, found by measuring
//     commits between a good and a bad one.
//   - submit: matrix files expanded into jobs, a run submitted
//     idempotently (re-attached, squat-checked, ordered by expected
//     duration), its suspected regressions re-queued to confirm, cancel.
//   - wheels: a commit's wheels staged in the store and its build record.
//   - report: what a run looks like to people and CI: the table, JUnit,
//     Markdown, the gate's notices and commit statuses, the runs and
//     dead-letter lists.
//   - watch: following a run to its end through its events and its stored
//     results, riding out NATS and store outages; the pools' service.
//   - gate: the verdict pipeline (JudgeRun), the regression gate, the
//     confirmation of suspects, series and their baselines.
//   - runstate: a run's jobs and their state, progress and rows, the
//     manifest as stored in bench-runs, the formatting every view shares.
//
// Beside report, producer/chart draws the series charts of `results
// trend` and the dashboard. Below them all, worker/fleet reads the farm's
// state (workers, boards, dead letters) and storage holds the results.
package producer
