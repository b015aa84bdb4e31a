package cpu

import "math"

// roundBF16 rounds x to the nearest bfloat16 value (round to nearest, ties
// to even, on the fp32 bits) and returns it as a float32. NaN stays NaN
// (quiet, sign kept); values past the largest bfloat16 round to ±Inf, as
// the hardware does.
func roundBF16(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return math.Float32frombits((b | 0x00400000) & 0xffff0000)
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b & 0xffff0000)
}

// roundBF16Slice rounds every element of s in place.
func roundBF16Slice(s []float32) {
	for i, v := range s {
		s[i] = roundBF16(v)
	}
}
