package device

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPCC(t *testing.T) {
	t.Parallel()
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	ninf := float32(math.Inf(-1))
	ramp := []float32{1, 2, 3, 4, 5}

	tests := []struct {
		name string
		a, b []float32
		want float64 // NaN means "want NaN"
		tol  float64
	}{
		{"identical", ramp, ramp, 1, 0},
		{"empty", nil, []float32{}, 1, 0},
		{"equal constants", []float32{3, 3, 3}, []float32{3, 3, 3}, 1, 0},
		{"equal zeros", []float32{0, 0}, []float32{0, 0}, 1, 0},
		{"all-close constants", []float32{1, 1, 1}, []float32{1.000001, 1.000001, 1.000001}, 1, 0},
		{"different constants", []float32{1, 1, 1}, []float32{2, 2, 2}, 0, 0},
		{"one constant", []float32{1, 1, 1}, []float32{1, 2, 3}, 0, 0},
		{"zeros vs values", []float32{0, 0, 0}, []float32{0, 1, 0}, 0, 0},
		{"scaled and shifted", ramp, []float32{12, 14, 16, 18, 20}, 1, 1e-12},
		{"anti-correlated", ramp, []float32{5, 4, 3, 2, 1}, -1, 1e-12},
		{"uncorrelated", []float32{1, -1, 1, -1}, []float32{1, 1, -1, -1}, 0, 1e-12},
		{"known value", []float32{1, 2, 3}, []float32{1, 3, 2}, 0.5, 1e-12},
		{"nan same places", []float32{1, nan, 2, 3}, []float32{1, nan, 3, 2}, 0.5, 1e-12},
		{"inf same places", []float32{inf, 1, 2, 3, ninf}, []float32{inf, 1, 3, 2, ninf}, 0.5, 1e-12},
		{"nan different places", []float32{1, nan, 2, 3}, []float32{1, 2, nan, 3}, 0, 0},
		{"nan vs inf", []float32{1, nan, 2}, []float32{1, inf, 2}, 0, 0},
		{"inf vs -inf", []float32{1, inf, 2}, []float32{1, ninf, 2}, 0, 0},
		{"nan only in one", []float32{1, 2, 3}, []float32{1, 2, nan}, 0, 0},
		{"all nan both", []float32{nan, nan}, []float32{nan, nan}, 1, 0},
		{"identical with nan", []float32{nan, 1, 2}, []float32{nan, 1, 2}, 1, 0},
		{"length mismatch", []float32{1, 2}, []float32{1, 2, 3}, math.NaN(), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PCC(tc.a, tc.b)
			if math.IsNaN(tc.want) {
				if !math.IsNaN(got) {
					t.Fatalf("PCC = %v, want NaN", got)
				}
				return
			}
			if math.Abs(got-tc.want) > tc.tol {
				t.Fatalf("PCC = %.15g, want %.15g (±%g)", got, tc.want, tc.tol)
			}
		})
	}
}

// TestPCCNearOne checks that a small perturbation gives a value just below
// one (never exactly one) and that the float64 accumulation stays accurate
// on long tensors with a large mean.
func TestPCCNearOne(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	a := make([]float32, n)
	b := make([]float32, n)
	for i := range a {
		a[i] = 1000 + float32(r.NormFloat64())
		b[i] = a[i] + float32(r.NormFloat64()*1e-3)
	}
	got := PCC(a, b)
	if got >= 1 || got < 0.999999 {
		t.Fatalf("PCC = %.15g, want in [0.999999, 1)", got)
	}
	// Symmetric.
	if back := PCC(b, a); math.Abs(back-got) > 1e-12 {
		t.Fatalf("PCC not symmetric: %v vs %v", got, back)
	}
}
