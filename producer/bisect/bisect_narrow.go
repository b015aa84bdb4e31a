package bisect

import "math/bits"

// The narrowing of a bisect, on its own so it can be reasoned about: given
// what is known of each commit of the range, which one to measure next,
// or which is the first bad one.

// Mark is what a bisect knows of one commit of its range.
type Mark uint8

const (
	// Untested: not measured yet.
	Untested Mark = iota
	// MarkGood: measured as fast as the good commit.
	MarkGood
	// MarkBad: measured as slow as the bad commit.
	MarkBad
	// MarkSkip: cannot be measured (no stored build, or no attempt passed).
	MarkSkip
)

func (m Mark) String() string {
	switch m {
	case MarkGood:
		return "good"
	case MarkBad:
		return "bad"
	case MarkSkip:
		return "skip"
	}
	return "untested"
}

// Narrowing is where a bisect stands (Narrow).
type Narrowing struct {
	// Probe is the index of the commit to measure next; -1 when none is.
	Probe int
	// FirstBad is the index of the first bad commit once it is known; -1
	// until then.
	FirstBad int
	// Candidates, when only skipped commits are left between the last good
	// commit and the first bad one, are the indexes of those skipped
	// commits and of the first bad one, oldest first: the first bad commit
	// is one of them, and no measurement can tell which.
	Candidates []int
	// Left is how many more probes the bisect takes at most when nothing
	// more is skipped: ceil(log2(k+1)) for k untested commits in the range.
	Left int
}

// Narrow reads marks, one per commit of the range oldest first (the good
// commit is just before marks[0] and not in it), and says what to do next.
// The range is between the last good commit before the first bad one (or
// the good end) and that first bad one; the probe is the untested commit
// of the range nearest its middle (the older one of two as near), so every
// probe halves the range. Without any bad commit there is nothing to find:
// Probe and FirstBad are both -1.
func Narrow(marks []Mark) Narrowing {
	out := Narrowing{Probe: -1, FirstBad: -1}
	hi := -1
	for i, m := range marks {
		if m == MarkBad {
			hi = i
			break
		}
	}
	if hi < 0 {
		return out
	}
	lo := -1
	for i := hi - 1; i >= 0; i-- {
		if marks[i] == MarkGood {
			lo = i
			break
		}
	}
	var untested, skipped []int
	for i := lo + 1; i < hi; i++ {
		switch marks[i] {
		case Untested:
			untested = append(untested, i)
		case MarkSkip:
			skipped = append(skipped, i)
		}
	}
	switch {
	case len(untested) > 0:
		mid := lo + (hi-lo)/2
		best := untested[0]
		for _, i := range untested[1:] {
			if dist(i, mid) < dist(best, mid) {
				best = i
			}
		}
		out.Probe = best
		out.Left = bits.Len(uint(len(untested)))
	case len(skipped) > 0:
		out.Candidates = append(skipped, hi)
	default:
		out.FirstBad = hi
	}
	return out
}

func dist(a, b int) int {
	if a < b {
		return b - a
	}
	return a - b
}

// Classify says whether a commit measured at v samples/s is good or bad,
// against the good and the bad commits' figures: good when v is nearer
// the good one (at or above their midpoint).
func Classify(v, good, bad float64) Mark {
	if v >= (good+bad)/2 {
		return MarkGood
	}
	return MarkBad
}
