package protocol

import "time"

// DefaultRunner is the runner of a pool when a job names none: cpu for the
// cpu pool, sim for sim, forge (the upstream harness) for the boards.
func DefaultRunner(pool string) string {
	switch pool {
	case "cpu":
		return RunnerCPU
	case "sim":
		return RunnerSim
	default:
		return RunnerForge
	}
}

// DecodeQueuedJob decodes a job as a worker receives it from BENCH_JOBS on
// subject, stored by the stream at stored: strictly, as DecodeJob, but the
// fields a publisher may leave out get their defaults first, so a
// hand-written job (e.g. published with natscli) runs like a submitted one.
// Required: id, run, benchmark.model, benchmark.batch_size,
// benchmark.loop_count (and benchmark.test for forge). Defaults: pool and
// priority from the subject, created_at the time the stream stored the
// message, then Normalize (schema, runner, data format, warmup, pcc_min).
func DecodeQueuedJob(data []byte, subject string, stored time.Time) (*Job, error) {
	return decodeJob(data, func(j *Job) {
		if pool, prio, err := ParseJobSubject(subject); err == nil {
			if j.Pool == "" {
				j.Pool = pool
			}
			if j.Priority == "" {
				j.Priority = prio
			}
		}
		if j.CreatedAt.IsZero() && !stored.IsZero() {
			j.CreatedAt = stored.UTC()
		}
		j.Normalize()
	})
}
