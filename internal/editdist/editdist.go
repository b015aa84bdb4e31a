// Package editdist measures how far apart two words are, for "did you
// mean" hints.
package editdist

// Distance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b: insertions, deletions, substitutions and
// swaps of two neighbours each cost 1.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Closest is the name of names closest to word, or "" when none is close:
// a typo or two, and not most of the name (x is not xy's typo). Ties go to
// the name first in sort order.
func Closest(word string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		d := Distance(word, n)
		if d > 2 || d*2 >= len(n) {
			continue
		}
		if best == "" || d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}
