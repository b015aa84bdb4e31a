package cpu

import "math"

// layer is a conv compiled for the device path: batch norm folded into the
// weights and bias, weights packed for the GEMM, bf16-rounded when the run
// asks for bfloat16.
type layer struct {
	src  *conv
	a    *packedA
	bias []float32
}

// plan is a network compiled for one data format.
type plan struct {
	net    *network
	bf16   bool
	layers map[*conv]*layer
}

// compile folds batch norm into every conv and packs the weights.
func compile(n *network, bf16 bool) *plan {
	p := &plan{net: n, bf16: bf16, layers: make(map[*conv]*layer)}
	for _, c := range n.convs() {
		w, b := fold(c)
		if bf16 {
			roundBF16Slice(w)
			roundBF16Slice(b)
		}
		k := c.cin * c.k * c.k
		p.layers[c] = &layer{src: c, a: packA(c.cout, k, w, k), bias: b}
	}
	return p
}

// fold returns the weights and bias of c with its batch norm folded in:
// with s = gamma/sqrt(var+eps), w' = s·w and b' = s·(bias-mean) + beta.
// The arithmetic is float64, rounded once to float32.
func fold(c *conv) (w, b []float32) {
	k := c.cin * c.k * c.k
	w = make([]float32, len(c.w))
	b = make([]float32, c.cout)
	for co := range c.cout {
		scale, shift := 1.0, 0.0
		if c.bn != nil {
			scale = float64(c.bn.gamma[co]) / math.Sqrt(float64(c.bn.variance[co])+bnEpsilon)
			shift = float64(c.bn.beta[co]) - scale*float64(c.bn.mean[co])
		}
		var bias float64
		if c.bias != nil {
			bias = float64(c.bias[co])
		}
		b[co] = float32(scale*bias + shift)
		for i := co * k; i < (co+1)*k; i++ {
			w[i] = float32(scale * float64(c.w[i]))
		}
	}
	return w, b
}
