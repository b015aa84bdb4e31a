//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// kernelAVX2 is the AVX2+FMA micro-kernel (kernel_amd64.s): the 16×6 tile
// lives in 12 YMM accumulators, B values are broadcast, A is loaded as two
// 8-wide vectors per k step. kc must be > 0.
//
//go:noescape
func kernelAVX2(kc int, a, b *float32, c *[mr * nr]float32)

func kernelAVX2Slices(kc int, a, b []float32, c *[mr * nr]float32) {
	if kc <= 0 {
		return
	}
	_ = a[kc*mr-1]
	_ = b[kc*nr-1]
	kernelAVX2(kc, &a[0], &b[0], c)
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernel = kernelAVX2Slices
		kernelName = "avx2-fma-16x6"
	}
}
