package protocol

import "time"

// DecodeQueuedJob decodes a job as a worker receives it from BENCH_JOBS on
// subject, stored by the stream at stored: strictly, as DecodeJob, but the
// fields a publisher may leave out get their defaults first, so a
// hand-written job (e.g. published with natscli) runs like a submitted one.
// Required: run, benchmark.model, benchmark.batch_size,
// benchmark.loop_count (and benchmark.test for a harness runner, which its runner checks). Defaults: pool and
// priority from the subject, created_at the time the stream stored the
// message, then Normalize (schema, runner, data format, warmup, pcc_min),
// and an absent id is the id of the content (JobID(run, Cell())).
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
		// A hand-written job may leave out its id: it is the id of its
		// content (JobID of run and cell), the only id a worker accepts.
		if j.ID == "" && j.Run != "" {
			j.ID = JobID(j.Run, j.Cell())
		}
	})
}
