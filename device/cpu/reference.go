package cpu

import (
	"context"
	"math"
)

// The reference path computes the golden output the device path is
// compared with. It shares nothing with the device path but the network's
// original weights: it runs one image at a time in NCHW, as a direct
// convolution with float64 accumulation, applies batch norm unfolded from
// the running statistics, and stores every activation as float32 (an fp32
// golden, whatever the run's data format).

// reference returns the golden outputs of batch samples of in.
func reference(ctx context.Context, n *network, in []float32, batch, threads int) ([]float32, error) {
	return referenceWith(ctx, n, in, batch, threads, &refBuffers{})
}

// referenceWith is reference with the tensors and accumulators of bufs.
func referenceWith(ctx context.Context, n *network, in []float32, batch, threads int, bufs *refBuffers) ([]float32, error) {
	inLen, outLen := n.inputLen(), n.outputLen()
	out := make([]float32, batch*outLen)
	convFn := func(c *conv, x refTensor, residual []float32, y refTensor) {
		refConvInto(c, x, residual, y, threads, bufs)
	}
	for img := range batch {
		o, err := refForward(ctx, n, in[img*inLen:(img+1)*inLen], bufs, convFn)
		if err != nil {
			return nil, err
		}
		copy(out[img*outLen:], o)
		bufs.put(o)
	}
	return out, nil
}

// refTensor is one image: c planes of h×w.
type refTensor struct {
	c, h, w int
	data    []float32
}

// refBuffers recycles the golden path's tensors and per-worker float64
// accumulators across the layers and images of one reference call.
type refBuffers struct {
	free [][]float32
	accs [][]float64
}

// tensor returns a c×h×w tensor (contents undefined).
func (r *refBuffers) tensor(c, h, w int) refTensor {
	n := c * h * w
	for i, s := range r.free {
		if cap(s) >= n {
			r.free[i] = r.free[len(r.free)-1]
			r.free = r.free[:len(r.free)-1]
			return refTensor{c: c, h: h, w: w, data: s[:n]}
		}
	}
	return refTensor{c: c, h: h, w: w, data: make([]float32, n)}
}

// put recycles a tensor's data.
func (r *refBuffers) put(s []float32) { r.free = append(r.free, s) }

// reserveAccs makes sure nw workers each have an accumulator of n floats.
func (r *refBuffers) reserveAccs(nw, n int) {
	for len(r.accs) < nw {
		r.accs = append(r.accs, nil)
	}
	for w := range nw {
		if cap(r.accs[w]) < n {
			r.accs[w] = make([]float64, n)
		}
	}
}

// refForward walks the network for one image, running every conv (with
// its batch norm, residual and ReLU) through convFn, which writes the
// conv's output into y. Tensors come from bufs and go back to it once
// used; the returned output is one of bufs' tensors, which the caller may
// put back.
func refForward(ctx context.Context, n *network, in []float32, bufs *refBuffers, convFn func(c *conv, x refTensor, residual []float32, y refTensor)) ([]float32, error) {
	conv := func(c *conv, x refTensor, residual []float32) refTensor {
		y := bufs.tensor(c.cout, c.outSize(x.h), c.outSize(x.w))
		convFn(c, x, residual, y)
		return y
	}
	var x refTensor
	if n.vision {
		x = refTensor{c: n.inC, h: n.size, w: n.size, data: in}
		y := conv(n.stem, x, nil)
		x = refMaxPool(y, bufs)
		bufs.put(y.data)
		for _, b := range n.blocks {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			short := x
			if b.down != nil {
				short = conv(b.down, x, nil)
			}
			y := x
			for i, c := range b.convs {
				var res []float32
				if i == len(b.convs)-1 {
					res = short.data
				}
				z := conv(c, y, res)
				if i > 0 {
					bufs.put(y.data)
				}
				y = z
			}
			if b.down != nil {
				bufs.put(short.data)
			}
			bufs.put(x.data)
			x = y
		}
		y = refAvgPool(x, bufs)
		bufs.put(x.data)
		x = y
	} else {
		x = refTensor{c: n.width, h: 1, w: 1, data: in}
	}
	for i, d := range n.dense {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		y := conv(d, x, nil)
		if n.vision || i > 0 { // not the caller's input
			bufs.put(x.data)
		}
		x = y
	}
	return x.data, nil
}

// refConvInto is refConv writing into y, with bufs' accumulators.
func refConvInto(c *conv, x refTensor, residual []float32, y refTensor, threads int, bufs *refBuffers) {
	oh, ow := y.h, y.w
	nw := min(max(1, threads), c.cout)
	bufs.reserveAccs(nw, oh*ow)
	parallelW(nw, c.cout, func(w, lo, hi int) {
		acc := bufs.accs[w][:oh*ow]
		for co := lo; co < hi; co++ {
			refConvChannel(c, x, co, oh, ow, acc)
			refFinish(c, co, acc, residual, y.data[co*oh*ow:(co+1)*oh*ow])
		}
	})
}

// refConvChannel computes output channel co of the bare convolution (no
// bias or batch norm) into acc (oh×ow, float64).
func refConvChannel(c *conv, x refTensor, co, oh, ow int, acc []float64) {
	clear(acc)
	for ci := range c.cin {
		plane := x.data[ci*x.h*x.w : (ci+1)*x.h*x.w]
		for ky := range c.k {
			for kx := range c.k {
				wv := float64(c.w[((co*c.cin+ci)*c.k+ky)*c.k+kx])
				// Output columns whose input column is inside the image.
				oxLo, oxHi := validRange(kx, c.stride, c.pad, x.w, ow)
				for oy := range oh {
					iy := oy*c.stride - c.pad + ky
					if iy < 0 || iy >= x.h {
						continue
					}
					src := plane[iy*x.w : (iy+1)*x.w]
					dst := acc[oy*ow : (oy+1)*ow]
					for ox := oxLo; ox < oxHi; ox++ {
						dst[ox] += wv * float64(src[ox*c.stride-c.pad+kx])
					}
				}
			}
		}
	}
}

// refFinish applies bias, batch norm, the residual and ReLU to output
// channel co of a bare convolution, in float64, and stores it in out.
func refFinish(c *conv, co int, acc []float64, residual []float32, out []float32) {
	var bias float64
	if c.bias != nil {
		bias = float64(c.bias[co])
	}
	n := len(acc)
	for i, v := range acc {
		v += bias
		if c.bn != nil {
			v = (v-float64(c.bn.mean[co]))/math.Sqrt(float64(c.bn.variance[co])+bnEpsilon)*float64(c.bn.gamma[co]) + float64(c.bn.beta[co])
		}
		if residual != nil {
			v += float64(residual[co*n+i])
		}
		if c.relu && v < 0 {
			v = 0
		}
		out[i] = float32(v)
	}
}

// validRange returns the output columns [lo, hi) whose input column
// ox·stride − pad + kx lies in [0, w).
func validRange(kx, stride, pad, w, ow int) (lo, hi int) {
	for lo = 0; lo < ow && lo*stride-pad+kx < 0; lo++ {
	}
	for hi = ow; hi > lo && (hi-1)*stride-pad+kx >= w; hi-- {
	}
	return lo, hi
}

// refMaxPool is a 3x3 stride-2 pad-1 max pool into a tensor of bufs.
func refMaxPool(x refTensor, bufs *refBuffers) refTensor {
	oh, ow := (x.h+2-3)/2+1, (x.w+2-3)/2+1
	y := bufs.tensor(x.c, oh, ow)
	for ch := range x.c {
		for oy := range oh {
			for ox := range ow {
				m := float32(math.Inf(-1))
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						iy, ix := oy*2+dy, ox*2+dx
						if iy >= 0 && iy < x.h && ix >= 0 && ix < x.w {
							m = max(m, x.data[(ch*x.h+iy)*x.w+ix])
						}
					}
				}
				y.data[(ch*oh+oy)*ow+ox] = m
			}
		}
	}
	return y
}

// refAvgPool is the global average pool, summed in float64, into a tensor
// of bufs.
func refAvgPool(x refTensor, bufs *refBuffers) refTensor {
	y := bufs.tensor(x.c, 1, 1)
	hw := x.h * x.w
	for ch := range x.c {
		var s float64
		for _, v := range x.data[ch*hw : (ch+1)*hw] {
			s += float64(v)
		}
		y.data[ch] = float32(s / float64(hw))
	}
	return y
}
