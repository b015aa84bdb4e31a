package protocol

// MaxRunJobs bounds the jobs of one run as a reader of bench-runs accepts
// them: a submit cannot build more (MaxMatrixCells), so a manifest claiming
// more was not written by one.
const MaxRunJobs = MaxMatrixCells

// MaxManifestChunks is the most chunks a manifest of MaxRunJobs jobs needs.
const MaxManifestChunks = (MaxRunJobs + ManifestChunkJobs - 1) / ManifestChunkJobs

// CheckRead validates a manifest (or the header of a chunked one) read from
// the bench-runs key ManifestKey(run), before anything is sized from it:
// Run is a valid id equal to run, JobCount and Chunks are within MaxRunJobs
// and agree with each other (Chunks = JobCount / ManifestChunkJobs, rounded
// up; no inline jobs beside chunks), inline jobs are at most MaxRunJobs and
// every job id is valid. Anyone who may write bench-runs may write any
// value, so a reader checks before it trusts. The error is a *FieldError
// (matches ErrInvalid).
func (m *RunManifest) CheckRead(run string) error {
	if err := ValidID("run", m.Run); err != nil {
		return err
	}
	if m.Run != run {
		return fieldErr("run", "is %q under the key of run %q", truncate(m.Run, 40), run)
	}
	if m.JobCount < 0 || m.JobCount > MaxRunJobs {
		return fieldErr("job_count", "must be between 0 and %d (got %d)", MaxRunJobs, m.JobCount)
	}
	if m.Chunks < 0 || m.Chunks > MaxManifestChunks {
		return fieldErr("chunks", "must be between 0 and %d (got %d)", MaxManifestChunks, m.Chunks)
	}
	if m.Chunks > 0 {
		if want := (m.JobCount + ManifestChunkJobs - 1) / ManifestChunkJobs; want != m.Chunks {
			return fieldErr("chunks", "is %d, job_count %d needs %d", m.Chunks, m.JobCount, want)
		}
		if len(m.Jobs) > 0 {
			return fieldErr("jobs", "must be empty in a chunked manifest (got %d)", len(m.Jobs))
		}
	} else if m.JobCount != 0 {
		return fieldErr("job_count", "is set (%d) without chunks", m.JobCount)
	}
	if len(m.Jobs) > MaxRunJobs {
		return fieldErr("jobs", "must be at most %d (got %d)", MaxRunJobs, len(m.Jobs))
	}
	for i := range m.Jobs {
		if err := ValidID("jobs[].id", m.Jobs[i].ID); err != nil {
			return err
		}
	}
	return nil
}
