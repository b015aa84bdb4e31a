package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// naiveGEMM is the reference: float64 accumulation, then the epilogue.
func naiveGEMM(m, n, k int, a, b []float32, ep epilogue) []float32 {
	c := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for kk := range k {
				s += float64(a[i*k+kk]) * float64(b[kk*n+j])
			}
			v := float32(s)
			if ep.bias != nil {
				v += ep.bias[i]
			}
			if ep.residual != nil {
				v += ep.residual[i*n+j]
			}
			if ep.relu && v < 0 {
				v = 0
			}
			c[i*n+j] = v
		}
	}
	return c
}

// withKernel runs f with each available micro-kernel.
func withKernel(t *testing.T, f func(t *testing.T)) {
	kernels := map[string]func(int, []float32, []float32, *[mr * nr]float32){"go": kernelGo}
	if kernelName != "go-16x6" {
		kernels[kernelName] = kernel
	}
	for name, k := range kernels {
		t.Run(name, func(t *testing.T) {
			old := kernel
			kernel = k
			defer func() { kernel = old }()
			f(t)
		})
	}
}

func TestGEMM(t *testing.T) {
	sizes := [][3]int{ // m, n, k
		{1, 1, 1}, {3, 5, 7}, {16, 6, 1}, {17, 7, 3}, {15, 5, 300}, {33, 49, 64},
		{64, 200, 257}, {129, 193, 513}, {1000, 3, 40}, {7, 400, 9},
	}
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, sz := range sizes {
			m, n, k := sz[0], sz[1], sz[2]
			for _, ep := range []epilogue{{}, {bias: randSlice(r, m), residual: randSlice(r, m*n), relu: true}} {
				t.Run(fmt.Sprintf("%dx%dx%d/epilogue=%t", m, n, k, ep.relu), func(t *testing.T) {
					a, b := randSlice(r, m*k), randSlice(r, k*n)
					want := naiveGEMM(m, n, k, a, b, ep)
					got := make([]float32, m*n)
					gemm(packA(m, k, a, k), denseB{k: k, n: n, ld: n, data: b}, got, n, ep)
					tol := 1e-5 * math.Sqrt(float64(k))
					for i := range got {
						if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("element %d (row %d col %d): got %v want %v", i, i/n, i%n, got[i], want[i])
						}
					}
				})
			}
		}
	})
}

func TestGEMMStrided(t *testing.T) {
	// C and B with leading dimensions larger than their widths.
	r := rand.New(rand.NewPCG(5, 6))
	m, n, k, ldb, ldc := 20, 11, 13, 17, 15
	a := randSlice(r, m*k)
	bs := randSlice(r, k*ldb)
	b := make([]float32, k*n)
	for kk := range k {
		copy(b[kk*n:], bs[kk*ldb:kk*ldb+n])
	}
	want := naiveGEMM(m, n, k, a, b, epilogue{})
	c := make([]float32, m*ldc)
	gemm(packA(m, k, a, k), denseB{k: k, n: n, ld: ldb, data: bs}, c, ldc, epilogue{})
	for i := range m {
		for j := range n {
			if d := math.Abs(float64(c[i*ldc+j] - want[i*n+j])); d > 1e-4 {
				t.Fatalf("(%d,%d): got %v want %v", i, j, c[i*ldc+j], want[i*n+j])
			}
		}
		for j := n; j < ldc; j++ {
			if c[i*ldc+j] != 0 {
				t.Fatalf("(%d,%d) past N written: %v", i, j, c[i*ldc+j])
			}
		}
	}
}

func TestRoundBF16(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   uint32
		want uint32
	}{
		{0x3f800000, 0x3f800000}, // 1.0 exact
		{0x3f808000, 0x3f800000}, // tie, even stays
		{0x3f818000, 0x3f820000}, // tie, odd rounds up
		{0x3f808001, 0x3f810000}, // above half rounds up
		{0x3f807fff, 0x3f800000}, // below half rounds down
		{0xbf808001, 0xbf810000}, // negative, magnitude up
		{0x00000000, 0x00000000}, // +0
		{0x80000000, 0x80000000}, // -0
		{0x7f800000, 0x7f800000}, // +Inf
		{0xff800000, 0xff800000}, // -Inf
		{0x7f7fffff, 0x7f800000}, // max float32 overflows to Inf
		{0x00010001, 0x00010000}, // subnormal
		{0x7fc00000, 0x7fc00000}, // quiet NaN
		{0x7f800001, 0x7fc00000}, // signalling NaN stays NaN
		{0xffc00001, 0xffc00000}, // negative NaN keeps sign
	}
	for _, tc := range tests {
		got := math.Float32bits(roundBF16(math.Float32frombits(tc.in)))
		if got != tc.want {
			t.Errorf("roundBF16(%#08x) = %#08x, want %#08x", tc.in, got, tc.want)
		}
	}
}

var gemmSizes = []int{256, 1024}

func BenchmarkGEMM(b *testing.B) {
	for _, n := range gemmSizes {
		r := rand.New(rand.NewPCG(1, 1))
		a, bb, c := randSlice(r, n*n), randSlice(r, n*n), make([]float32, n*n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		b.Run(fmt.Sprintf("ours-%s/%d", kernelName, n), func(b *testing.B) {
			pa := packA(n, n, a, n)                                         // weights are packed once, at compile time
			gemm(pa, denseB{k: n, n: n, ld: n, data: bb}, c, n, epilogue{}) // warm the scratch
			for b.Loop() {
				gemm(pa, denseB{k: n, n: n, ld: n, data: bb}, c, n, epilogue{})
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		if kernelName != "go-16x6" {
			b.Run(fmt.Sprintf("ours-go-16x6/%d", n), func(b *testing.B) {
				old := kernel
				kernel = kernelGo
				defer func() { kernel = old }()
				pa := packA(n, n, a, n)
				gemm(pa, denseB{k: n, n: n, ld: n, data: bb}, c, n, epilogue{})
				for b.Loop() {
					gemm(pa, denseB{k: n, n: n, ld: n, data: bb}, c, n, epilogue{})
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		b.Run(fmt.Sprintf("gonum/%d", n), func(b *testing.B) {
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, bb, n, 0, c, n)
			for b.Loop() {
				gonum.Implementation{}.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, bb, n, 0, c, n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
