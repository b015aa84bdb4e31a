package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// GEMM blocking. A is packed into panels of mr rows, B into panels of nr
// columns; the micro-kernel multiplies one mr×kc A panel by one kc×nr B
// panel. A tile of mcBlock×ncBlock outputs is accumulated in a per-worker
// scratch buffer over kc-long slices of K, so the B panel in use stays in
// L1 and the A block in L2, then the epilogue writes the tile to C.
const (
	mr      = 16
	nr      = 6
	kcBlock = 256
	mcBlock = 8 * mr  // 128 rows
	ncBlock = 32 * nr // 192 columns
)

// packedA is an M×K matrix (the weights of a layer) packed once at compile
// time: panel p holds rows p*mr..p*mr+mr-1, k-major (element (r, k) at
// data[p*k*mr + k*mr + r]); rows past M are zero.
type packedA struct {
	m, k int
	data []float32
}

func (p *packedA) panels() int { return (p.m + mr - 1) / mr }

// packA packs the row-major M×K matrix a (leading dimension lda).
func packA(m, k int, a []float32, lda int) *packedA {
	np := (m + mr - 1) / mr
	p := &packedA{m: m, k: k, data: make([]float32, np*k*mr)}
	for i := range m {
		pi, r := i/mr, i%mr
		dst := p.data[pi*k*mr:]
		row := a[i*lda : i*lda+k]
		for kk, v := range row {
			dst[kk*mr+r] = v
		}
	}
	return p
}

// epilogue is what happens to an accumulated output element before it is
// stored: c = act(acc + bias[row] + residual[row, col]), optionally rounded
// to bfloat16.
type epilogue struct {
	bias     []float32 // per row, or nil
	residual []float32 // same shape and ldc as C, or nil
	relu     bool
	bf16     bool
}

// bSource fills packed B panels. fill writes panel np (columns
// np*nr..np*nr+nr-1, zero past N) for all K rows into dst (k-major, nr per
// row: dst[k*nr + j]).
type bSource interface {
	dims() (k, n int)
	fill(np int, dst []float32)
}

// denseB is a row-major K×N matrix with leading dimension ld.
type denseB struct {
	k, n, ld int
	data     []float32
}

func (d denseB) dims() (int, int) { return d.k, d.n }

func (d denseB) fill(np int, dst []float32) {
	c0 := np * nr
	w := min(nr, d.n-c0)
	dst = dst[:d.k*nr]
	if w == nr {
		for kk := range d.k {
			src := d.data[kk*d.ld+c0 : kk*d.ld+c0+nr]
			copy(dst[kk*nr:kk*nr+nr], src)
		}
		return
	}
	for kk := range d.k {
		row := dst[kk*nr : kk*nr+nr]
		clear(row)
		copy(row, d.data[kk*d.ld+c0:kk*d.ld+c0+w])
	}
}

// gemmScratch is the scratch memory of GEMM calls: the packed B of a call
// and one accumulator tile per worker. It grows to the largest call made
// with it and is reused; one scratch serves one call at a time.
type gemmScratch struct {
	packedB []float32
	tiles   [][]float32 // per worker accumulators
}

// reserve grows the scratch to serve calls of up to packedB floats of
// packed B with up to nw workers.
func (s *gemmScratch) reserve(packedB, nw int) {
	if cap(s.packedB) < packedB {
		s.packedB = make([]float32, packedB)
	}
	for len(s.tiles) < nw {
		s.tiles = append(s.tiles, make([]float32, mcBlock*ncBlock))
	}
}

// packedBLen is the length of the packed B of a K×N matrix.
func packedBLen(k, n int) int { return (n + nr - 1) / nr * k * nr }

// defaultThreads is the number of goroutines a GEMM uses by default.
func defaultThreads() int { return max(1, runtime.GOMAXPROCS(0)) }

// gemmN is gemm with up to nw goroutines and the scratch s, grown if the
// call needs more.
func gemmN(nw int, s *gemmScratch, a *packedA, b bSource, c []float32, ldc int, ep epilogue) {
	k, n := b.dims()
	if k != a.k {
		panic("cpu: gemm: inner dimensions differ")
	}
	m := a.m
	if m == 0 || n == 0 {
		return
	}
	nw = max(1, nw)
	npB := (n + nr - 1) / nr
	need := packedBLen(k, n)
	s.reserve(need, nw)
	pb := s.packedB[:need]

	// Step 1: pack B, panels split evenly across workers.
	parallel(nw, npB, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			b.fill(p, pb[p*k*nr:(p+1)*k*nr])
		}
	})

	// Step 2: tiles of mcBlock×ncBlock outputs, handed out dynamically.
	mBlocks := (m + mcBlock - 1) / mcBlock
	nBlocks := (n + ncBlock - 1) / ncBlock
	total := mBlocks * nBlocks
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(nw, total) {
		acc := s.tiles[w]
		wg.Go(func() {
			for {
				t := int(next.Add(1)) - 1
				if t >= total {
					return
				}
				// Walk N blocks fastest so consecutive tiles share the A block.
				mb, nb := t/nBlocks, t%nBlocks
				gemmTile(a, pb, k, n, mb, nb, acc, c, ldc, ep)
			}
		})
	}
	wg.Wait()
}

// gemmTile computes output tile (mb, nb) into c.
func gemmTile(a *packedA, pb []float32, k, n, mb, nb int, acc, c []float32, ldc int, ep epilogue) {
	mp0 := mb * mcBlock / mr
	mp1 := min(a.panels(), mp0+mcBlock/mr)
	np0 := nb * ncBlock / nr
	np1 := min((n+nr-1)/nr, np0+ncBlock/nr)
	nnp := np1 - np0
	clear(acc[:(mp1-mp0)*nnp*mr*nr])
	for k0 := 0; k0 < k; k0 += kcBlock {
		kc := min(kcBlock, k-k0)
		for np := np0; np < np1; np++ {
			bp := pb[np*k*nr+k0*nr : np*k*nr+(k0+kc)*nr]
			for mp := mp0; mp < mp1; mp++ {
				ap := a.data[mp*k*mr+k0*mr : mp*k*mr+(k0+kc)*mr]
				t := ((mp-mp0)*nnp + (np - np0)) * mr * nr
				kernel(kc, ap, bp, (*[mr * nr]float32)(acc[t:t+mr*nr]))
			}
		}
	}
	// Epilogue: tile t is column-major (element (r, j) at j*mr + r).
	for mp := mp0; mp < mp1; mp++ {
		rows := min(mr, a.m-mp*mr)
		for np := np0; np < np1; np++ {
			cols := min(nr, n-np*nr)
			t := acc[((mp-mp0)*nnp+(np-np0))*mr*nr:][:mr*nr]
			for r := range rows {
				i := mp*mr + r
				var bias float32
				if ep.bias != nil {
					bias = ep.bias[i]
				}
				off := i*ldc + np*nr
				dst := c[off : off+cols]
				var res []float32
				if ep.residual != nil {
					res = ep.residual[off : off+cols]
				}
				for j := range dst {
					v := t[j*mr+r] + bias
					if res != nil {
						v += res[j]
					}
					if ep.relu && v < 0 {
						v = 0
					}
					if ep.bf16 {
						v = roundBF16(v)
					}
					dst[j] = v
				}
			}
		}
	}
}

// parallel splits [0, n) into at most nw contiguous ranges and runs f on
// each in its own goroutine, returning when all are done.
func parallel(nw, n int, f func(lo, hi int)) {
	parallelW(nw, n, func(_, lo, hi int) { f(lo, hi) })
}

// parallelW is parallel that also tells f which of the ranges, numbered
// from 0 to min(nw, n)-1, it runs.
func parallelW(nw, n int, f func(w, lo, hi int)) {
	if nw <= 1 || n <= 1 {
		f(0, 0, n)
		return
	}
	nw = min(nw, n)
	var wg sync.WaitGroup
	for w := range nw {
		lo, hi := w*n/nw, (w+1)*n/nw
		wg.Go(func() { f(w, lo, hi) })
	}
	wg.Wait()
}

// kernelGo is the portable micro-kernel: c[j*mr+r] += Σ_k a[k*mr+r]·b[k*nr+j]
// over kc steps. It walks the 16×6 tile in 4×2 sub-tiles so that the eight
// accumulators, four A values and two B values fit the floating-point
// registers (the compiler spills with larger blocks).
func kernelGo(kc int, a, b []float32, c *[mr * nr]float32) {
	a = a[:kc*mr]
	b = b[:kc*nr]
	for r := 0; r < mr; r += 4 {
		for j := 0; j < nr; j += 2 {
			var c00, c01, c10, c11, c20, c21, c30, c31 float32
			ai, bi := r, j
			for range kc {
				aa := a[ai : ai+4 : ai+4]
				bb := b[bi : bi+2 : bi+2]
				b0, b1 := bb[0], bb[1]
				c00 += aa[0] * b0
				c01 += aa[0] * b1
				c10 += aa[1] * b0
				c11 += aa[1] * b1
				c20 += aa[2] * b0
				c21 += aa[2] * b1
				c30 += aa[3] * b0
				c31 += aa[3] * b1
				ai += mr
				bi += nr
			}
			c0 := c[j*mr+r : j*mr+r+4 : j*mr+r+4]
			c1 := c[(j+1)*mr+r : (j+1)*mr+r+4 : (j+1)*mr+r+4]
			c0[0] += c00
			c0[1] += c10
			c0[2] += c20
			c0[3] += c30
			c1[0] += c01
			c1[1] += c11
			c1[2] += c21
			c1[3] += c31
		}
	}
}
