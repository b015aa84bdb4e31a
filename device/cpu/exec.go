package cpu

import (
	"context"
	"math"
)

// activation is a CNHW tensor: c planes, each holding b images of h×w
// (element (ch, img, y, x) at data[((ch*b+img)*h+y)*w+x]). Keeping the
// channel outermost makes a 1x1 conv a plain GEMM over all b·h·w columns
// and lets im2col read each channel's images contiguously.
type activation struct {
	c, b, h, w int
	data       []float32
}

func (t activation) cols() int { return t.b * t.h * t.w }

// executor runs a plan on the device path (folded, packed GEMMs).
type executor struct {
	p       *plan
	threads int
	free    [][]float32 // recycled buffers
	scratch gemmScratch // of every GEMM of the executor
}

func newExecutor(p *plan, threads int) *executor {
	return &executor{p: p, threads: max(1, threads)}
}

// get returns a buffer of length n (contents undefined).
func (e *executor) get(n int) []float32 {
	for i, s := range e.free {
		if cap(s) >= n {
			e.free[i] = e.free[len(e.free)-1]
			e.free = e.free[:len(e.free)-1]
			return s[:n]
		}
	}
	return make([]float32, n)
}

// put recycles a buffer.
func (e *executor) put(s []float32) {
	if s != nil {
		e.free = append(e.free, s)
	}
}

// chunkSize is how many images of a batch go through the network
// together: as many as fit a ~96 MiB packed-B working set, at least one.
func (p *plan) chunkSize(batch int) int {
	if !p.net.vision {
		return batch
	}
	var perImage int
	h := p.net.size
	walk := func(c *conv, h int) int {
		oh := c.outSize(h)
		perImage = max(perImage, c.cin*c.k*c.k*oh*oh)
		return oh
	}
	h = walk(p.net.stem, h)
	h = (h+2-3)/2 + 1
	for _, b := range p.net.blocks {
		hh := h
		for _, c := range b.convs {
			hh = walk(c, hh)
		}
		h = hh
	}
	const budget = 96 << 20 / 4
	return max(1, min(batch, budget/max(1, perImage)))
}

// forward runs one batch. in holds batch samples back to back (NCHW for
// vision models); out receives batch × classes outputs. It checks ctx
// between layers.
func (e *executor) forward(ctx context.Context, in []float32, batch int, out []float32) error {
	n := e.p.net
	chunk := e.p.chunkSize(batch)
	// Grown once to the largest GEMM of a chunk, never step by step.
	e.scratch.reserve(packedBFloats(n, chunk), e.threads)
	inLen, outLen := n.inputLen(), n.outputLen()
	for b0 := 0; b0 < batch; b0 += chunk {
		nb := min(chunk, batch-b0)
		if err := e.forwardChunk(ctx, in[b0*inLen:(b0+nb)*inLen], nb, out[b0*outLen:(b0+nb)*outLen]); err != nil {
			return err
		}
	}
	return nil
}

func (e *executor) forwardChunk(ctx context.Context, in []float32, nb int, out []float32) error {
	n := e.p.net
	var x activation
	if n.vision {
		// NCHW → CNHW.
		hw := n.size * n.size
		x = activation{c: n.inC, b: nb, h: n.size, w: n.size, data: e.get(n.inC * nb * hw)}
		for img := range nb {
			for ch := range n.inC {
				copy(x.data[(ch*nb+img)*hw:(ch*nb+img+1)*hw], in[(img*n.inC+ch)*hw:])
			}
		}
	} else {
		// NC → CN.
		x = activation{c: n.width, b: nb, h: 1, w: 1, data: e.get(n.width * nb)}
		for img := range nb {
			for ch := range n.width {
				x.data[ch*nb+img] = in[img*n.width+ch]
			}
		}
	}
	if e.p.bf16 {
		roundBF16Slice(x.data)
	}
	if n.vision {
		y := e.conv(n.stem, x, nil)
		e.put(x.data)
		x = e.maxPool(y)
		e.put(y.data)
		for _, b := range n.blocks {
			if err := ctx.Err(); err != nil {
				e.put(x.data)
				return err
			}
			y := e.block(b, x)
			e.put(x.data)
			x = y
		}
		y = e.avgPool(x)
		e.put(x.data)
		x = y
	}
	for _, d := range n.dense {
		if err := ctx.Err(); err != nil {
			e.put(x.data)
			return err
		}
		y := e.conv(d, x, nil)
		e.put(x.data)
		x = y
	}
	// CN → NC.
	for ch := range x.c {
		for img := range nb {
			out[img*x.c+ch] = x.data[ch*nb+img]
		}
	}
	e.put(x.data)
	return nil
}

// block runs a residual block; the last conv adds the shortcut before its
// ReLU, fused into the GEMM epilogue.
func (e *executor) block(b *block, x activation) activation {
	short := x
	if b.down != nil {
		short = e.conv(b.down, x, nil)
	}
	y := x
	last := len(b.convs) - 1
	for i, c := range b.convs {
		var res []float32
		if i == last {
			res = short.data
		}
		z := e.conv(c, y, res)
		if i > 0 {
			e.put(y.data)
		}
		y = z
	}
	if b.down != nil {
		e.put(short.data)
	}
	return y
}

// conv runs one compiled conv: a GEMM of the packed weights with the input
// itself (1x1, stride 1) or with its im2col, packed on the fly.
func (e *executor) conv(c *conv, x activation, residual []float32) activation {
	l := e.p.layers[c]
	oh, ow := c.outSize(x.h), c.outSize(x.w)
	y := activation{c: c.cout, b: x.b, h: oh, w: ow, data: e.get(c.cout * x.b * oh * ow)}
	ep := epilogue{bias: l.bias, residual: residual, relu: c.relu, bf16: e.p.bf16}
	var src bSource
	if c.k == 1 && c.stride == 1 && c.pad == 0 {
		src = denseB{k: c.cin, n: x.cols(), ld: x.cols(), data: x.data}
	} else {
		src = &im2col{x: x, k: c.k, stride: c.stride, pad: c.pad, oh: oh, ow: ow}
	}
	gemmN(e.threads, &e.scratch, l.a, src, y.data, y.cols(), ep)
	return y
}

// im2col presents the patches of a conv input as the K×N matrix B of the
// GEMM (K = cin·k·k, N = images·oh·ow) and packs it without materializing
// it.
type im2col struct {
	x              activation
	k, stride, pad int
	oh, ow         int
}

func (m *im2col) dims() (int, int) { return m.x.c * m.k * m.k, m.x.b * m.oh * m.ow }

func (m *im2col) fill(np int, dst []float32) {
	x := m.x
	_, n := m.dims()
	// Per column: the image offset within a channel plane and the top-left
	// input coordinate of its patch.
	var base [nr]int
	var iy0, ix0 [nr]int
	valid := min(nr, n-np*nr)
	for j := range nr {
		col := np*nr + j
		if j >= valid {
			iy0[j], ix0[j] = -1<<30, -1<<30 // always out of range: zero
			continue
		}
		img := col / (m.oh * m.ow)
		r := col % (m.oh * m.ow)
		base[j] = img * x.h * x.w
		iy0[j] = (r/m.ow)*m.stride - m.pad
		ix0[j] = (r%m.ow)*m.stride - m.pad
	}
	plane := x.b * x.h * x.w
	kk := 0
	for ch := range x.c {
		src := x.data[ch*plane : (ch+1)*plane]
		for ky := range m.k {
			for kx := range m.k {
				row := dst[kk*nr : kk*nr+nr]
				for j := range row {
					iy, ix := iy0[j]+ky, ix0[j]+kx
					if uint(iy) < uint(x.h) && uint(ix) < uint(x.w) {
						row[j] = src[base[j]+iy*x.w+ix]
					} else {
						row[j] = 0
					}
				}
				kk++
			}
		}
	}
}

// maxPool is the 3x3 stride-2 pad-1 max pool of the ResNet stem.
func (e *executor) maxPool(x activation) activation {
	oh, ow := (x.h+2-3)/2+1, (x.w+2-3)/2+1
	y := activation{c: x.c, b: x.b, h: oh, w: ow, data: e.get(x.c * x.b * oh * ow)}
	parallel(e.threads, x.c*x.b, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			src := x.data[p*x.h*x.w : (p+1)*x.h*x.w]
			dst := y.data[p*oh*ow : (p+1)*oh*ow]
			for oy := range oh {
				for ox := range ow {
					m := float32(math.Inf(-1))
					for ky := oy*2 - 1; ky <= oy*2+1; ky++ {
						if ky < 0 || ky >= x.h {
							continue
						}
						for kx := ox*2 - 1; kx <= ox*2+1; kx++ {
							if kx >= 0 && kx < x.w {
								m = max(m, src[ky*x.w+kx])
							}
						}
					}
					dst[oy*ow+ox] = m
				}
			}
		}
	})
	return y
}

// avgPool is the global average pool: CNHW → CN (a 1x1 activation).
func (e *executor) avgPool(x activation) activation {
	y := activation{c: x.c, b: x.b, h: 1, w: 1, data: e.get(x.c * x.b)}
	hw := x.h * x.w
	for p := range x.c * x.b {
		var s float32
		for _, v := range x.data[p*hw : (p+1)*hw] {
			s += v
		}
		v := s / float32(hw)
		if e.p.bf16 {
			v = roundBF16(v)
		}
		y.data[p] = v
	}
	return y
}
