package editdist_test

import (
	"testing"

	"github.com/benchfleet/benchfleet/internal/editdist"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"model", "model", 0}, {"", "abc", 3}, {"modle", "model", 1}, {"mdoel", "model", 1},
		{"batch", "batch-size", 5}, {"kitten", "sitting", 3}, {"größe", "grösse", 2},
	} {
		if got := editdist.Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := editdist.Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
