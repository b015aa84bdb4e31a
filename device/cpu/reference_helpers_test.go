package cpu

import "sync"

// Allocating forms of the engine's kernels, which the engine itself no
// longer calls (it reuses its buffers); the tests compare against them.

// gemmPool is the scratch memory of gemm calls, reused across calls.
var gemmPool = sync.Pool{New: func() any { return new(gemmScratch) }}

// gemm computes C = epilogue(A·B) for the packed M×K matrix a and the K×N
// matrix b; C is row-major M×N with leading dimension ldc. It uses up to
// GOMAXPROCS goroutines and scratch from a shared pool, and returns when C
// is complete.
func gemm(a *packedA, b bSource, c []float32, ldc int, ep epilogue) {
	s := gemmPool.Get().(*gemmScratch)
	defer gemmPool.Put(s)
	gemmN(defaultThreads(), s, a, b, c, ldc, ep)
}

// refConv is a direct convolution: for every output channel, the sum over
// input channels and kernel taps of weight × shifted input plane, in
// float64; then bias, batch norm, the residual and ReLU, in float64.
func refConv(c *conv, x refTensor, residual []float32, threads int) refTensor {
	oh, ow := c.outSize(x.h), c.outSize(x.w)
	y := refTensor{c: c.cout, h: oh, w: ow, data: make([]float32, c.cout*oh*ow)}
	refConvInto(c, x, residual, y, threads, &refBuffers{})
	return y
}

// fold returns the weights and bias of c with its batch norm folded in:
// with s = gamma/sqrt(var+eps), w' = s·w and b' = s·(bias-mean) + beta.
// The arithmetic is float64, rounded once to float32.
func fold(c *conv) (w, b []float32) { return foldInto(c, make([]float32, len(c.w))) }
