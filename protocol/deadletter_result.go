package protocol

// DeadLettered reports whether r is the result a dead letter left: status
// error, error class ClassDeadLetter. It is the one result that is not
// final: the result of a later attempt of the job (after `dlq retry`)
// replaces it.
func (r *Result) DeadLettered() bool {
	return r != nil && r.Status == StatusError && r.Error != nil && r.Error.Class == ClassDeadLetter
}

// Supersedes reports whether r, a result of the same job, replaces the
// stored result old: old is a dead letter's result of an earlier attempt.
func (r *Result) Supersedes(old *Result) bool {
	return r != nil && old.DeadLettered() && r.Job == old.Job && r.Run == old.Run && r.Attempt > old.Attempt
}
