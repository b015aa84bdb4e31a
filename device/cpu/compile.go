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

// compile folds batch norm into every conv and packs the weights. The
// folded weights of one layer at a time live in one buffer, reused.
func compile(n *network, bf16 bool) *plan {
	p := &plan{net: n, bf16: bf16, layers: make(map[*conv]*layer)}
	var buf []float32
	for _, c := range n.convs() {
		if cap(buf) < len(c.w) {
			buf = make([]float32, foldBufLen(n))
		}
		w, b := foldInto(c, buf[:len(c.w)])
		if bf16 {
			roundBF16Slice(w)
			roundBF16Slice(b)
		}
		k := c.cin * c.k * c.k
		p.layers[c] = &layer{src: c, a: packA(c.cout, k, w, k), bias: b}
	}
	return p
}

// foldBufLen is the length of the largest weight tensor of n.
func foldBufLen(n *network) int {
	var most int
	for _, c := range n.convs() {
		most = max(most, c.cout*c.cin*c.k*c.k)
	}
	return most
}

// foldInto is fold writing the weights into w (len(c.w) floats).
func foldInto(c *conv, w []float32) (_, b []float32) {
	k := c.cin * c.k * c.k
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
