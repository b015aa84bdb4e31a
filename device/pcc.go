package device

import "math"

// PCC returns the Pearson correlation coefficient of a (the device output)
// and b (the golden output), both flattened, with the semantics of the
// upstream harness (tt-forge's calculate_pcc, used by compare_with_golden):
//
//   - Accumulation is in float64, in two passes (means, then centred sums),
//     so long tensors do not lose precision.
//   - NaN and ±Inf are masked out when both tensors have them at the same
//     places with the same kind (NaN, +Inf or -Inf). If the masks or kinds
//     differ the tensors disagree and PCC returns 0.
//   - Tensors whose remaining elements are identical (this includes two
//     equal constant tensors, two empty tensors and two tensors that are
//     entirely masked) have PCC 1.
//   - When exactly one of the two has zero variance the correlation is
//     undefined and PCC returns 0. When both have zero variance (two
//     different constants) PCC returns 1 if they are all-close in numpy's
//     default sense (|a-b| <= 1e-8 + 1e-5·|b|) and 0 otherwise. (Upstream
//     returns 1 for any two constants through numpy's masked division; 0 is
//     the honest answer for constants that differ.)
//   - Otherwise the value is the sample correlation, clamped to [-1, 1].
//     Two tensors that differ only by rounding give a value just below 1,
//     never exactly 1: all-close tensors are not short-circuited, so a real
//     PCC is always reported.
//
// A length mismatch is a caller bug with no meaningful correlation: PCC
// returns NaN, which fails every threshold comparison.
func PCC(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	// Pass 1: validate the invalid-value masks, check identity, sum.
	identical := true
	var n int
	var sa, sb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		xi, yi := invalidKind(x), invalidKind(y)
		if xi != yi {
			return 0
		}
		if xi != 0 {
			continue
		}
		if x != y {
			identical = false
		}
		n++
		sa += x
		sb += y
	}
	if identical {
		return 1
	}
	ma, mb := sa/float64(n), sb/float64(n)
	// Pass 2: centred sums.
	var sab, saa, sbb float64
	allClose := true
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		if invalidKind(x) != 0 {
			continue
		}
		if math.Abs(x-y) > 1e-8+1e-5*math.Abs(y) {
			allClose = false
		}
		dx, dy := x-ma, y-mb
		sab += dx * dy
		saa += dx * dx
		sbb += dy * dy
	}
	switch {
	case saa == 0 && sbb == 0:
		if allClose {
			return 1
		}
		return 0
	case saa == 0 || sbb == 0:
		return 0
	}
	r := sab / (math.Sqrt(saa) * math.Sqrt(sbb))
	return max(-1, min(1, r))
}

// invalidKind classifies x: 0 finite, 1 NaN, 2 +Inf, 3 -Inf.
func invalidKind(x float64) int {
	switch {
	case x != x:
		return 1
	case math.IsInf(x, 1):
		return 2
	case math.IsInf(x, -1):
		return 3
	}
	return 0
}
