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
	inLen, outLen := n.inputLen(), n.outputLen()
	out := make([]float32, batch*outLen)
	for img := range batch {
		o, err := referenceOne(ctx, n, in[img*inLen:(img+1)*inLen], threads)
		if err != nil {
			return nil, err
		}
		copy(out[img*outLen:], o)
	}
	return out, nil
}

// refTensor is one image: c planes of h×w.
type refTensor struct {
	c, h, w int
	data    []float32
}

func referenceOne(ctx context.Context, n *network, in []float32, threads int) ([]float32, error) {
	return refForward(ctx, n, in, func(c *conv, x refTensor, res []float32) refTensor {
		return refConv(c, x, res, threads)
	})
}

// refForward walks the network for one image, running every conv (with
// its batch norm, residual and ReLU) through convFn.
func refForward(ctx context.Context, n *network, in []float32, convFn func(c *conv, x refTensor, residual []float32) refTensor) ([]float32, error) {
	var x refTensor
	if n.vision {
		x = refTensor{c: n.inC, h: n.size, w: n.size, data: in}
		x = convFn(n.stem, x, nil)
		x = refMaxPool(x)
		for _, b := range n.blocks {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			short := x
			if b.down != nil {
				short = convFn(b.down, x, nil)
			}
			y := x
			for i, c := range b.convs {
				var res []float32
				if i == len(b.convs)-1 {
					res = short.data
				}
				y = convFn(c, y, res)
			}
			x = y
		}
		x = refAvgPool(x)
	} else {
		x = refTensor{c: n.width, h: 1, w: 1, data: in}
	}
	for _, d := range n.dense {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		x = convFn(d, x, nil)
	}
	return x.data, nil
}

// refConv is a direct convolution: for every output channel, the sum over
// input channels and kernel taps of weight × shifted input plane, in
// float64; then bias, batch norm, the residual and ReLU, in float64.
func refConv(c *conv, x refTensor, residual []float32, threads int) refTensor {
	oh, ow := c.outSize(x.h), c.outSize(x.w)
	y := refTensor{c: c.cout, h: oh, w: ow, data: make([]float32, c.cout*oh*ow)}
	parallel(threads, c.cout, func(lo, hi int) {
		acc := make([]float64, oh*ow)
		for co := lo; co < hi; co++ {
			refConvChannel(c, x, co, oh, ow, acc)
			refFinish(c, co, acc, residual, y.data[co*oh*ow:(co+1)*oh*ow])
		}
	})
	return y
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

// refMaxPool is a 3x3 stride-2 pad-1 max pool.
func refMaxPool(x refTensor) refTensor {
	oh, ow := (x.h+2-3)/2+1, (x.w+2-3)/2+1
	y := refTensor{c: x.c, h: oh, w: ow, data: make([]float32, x.c*oh*ow)}
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

// refAvgPool is the global average pool, summed in float64.
func refAvgPool(x refTensor) refTensor {
	y := refTensor{c: x.c, h: 1, w: 1, data: make([]float32, x.c)}
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
