// Package submit puts runs on the farm: matrix files expanded into jobs
// (ParseMatrix), submit options and CI provenance, the idempotent submit
// (Submitter: a bounded publish window, re-attaching to a run already
// recorded, the squat check, jobs ordered by expected duration), the
// confirmation repeats of suspected regressions (Confirmer) and cancel.
package submit
