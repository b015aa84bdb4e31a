package submit

// Pools lists the pools of s's jobs, each once, in the order they come.
func (s *Submission) Pools() []string {
	seen := map[string]bool{}
	var out []string
	for _, j := range s.Jobs {
		if !seen[j.Pool] {
			seen[j.Pool] = true
			out = append(out, j.Pool)
		}
	}
	return out
}
