package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

func TestGraphShapes(t *testing.T) {
	tests := []struct {
		model         string
		convs, dense  int
		downsamples   int
		params        int // torchvision's parameter count
		stageStrides  []int
		firstBlockLen int
	}{
		{ModelResNet50, 53, 1, 4, 25_557_032, nil, 3},
		{ModelResNet18, 20, 1, 3, 11_689_512, nil, 2},
	}
	for _, tc := range tests {
		n, err := buildNetwork(tc.model, 32)
		if err != nil {
			t.Fatal(err)
		}
		var convs, downs int
		for _, c := range n.convs() {
			if c.bn != nil {
				convs++
			}
		}
		for _, b := range n.blocks {
			if b.down != nil {
				downs++
			}
		}
		if convs != tc.convs || len(n.dense) != tc.dense || downs != tc.downsamples {
			t.Errorf("%s: %d convs, %d fc, %d downsamples; want %d, %d, %d", tc.model, convs, len(n.dense), downs, tc.convs, tc.dense, tc.downsamples)
		}
		if p := n.params(); p != tc.params {
			t.Errorf("%s: %d parameters, want %d", tc.model, p, tc.params)
		}
		if got := len(n.blocks[0].convs); got != tc.firstBlockLen {
			t.Errorf("%s: blocks have %d convs, want %d", tc.model, got, tc.firstBlockLen)
		}
		if n.outputLen() != classes || n.dense[0].cin != map[string]int{ModelResNet50: 2048, ModelResNet18: 512}[tc.model] {
			t.Errorf("%s: fc is %d→%d", tc.model, n.dense[0].cin, n.dense[0].cout)
		}
	}

	// ResNet-50 v1.5: a downsampling bottleneck strides on its 3x3 conv.
	n, _ := buildNetwork(ModelResNet50, 32)
	for i, b := range n.blocks {
		if b.convs[0].stride != 1 || b.convs[2].stride != 1 {
			t.Errorf("block %d: 1x1 convs have stride %d, %d", i, b.convs[0].stride, b.convs[2].stride)
		}
		if b.down != nil && b.convs[1].stride != b.down.stride {
			t.Errorf("block %d: 3x3 stride %d, shortcut stride %d", i, b.convs[1].stride, b.down.stride)
		}
	}
	if s := n.stem; s.k != 7 || s.stride != 2 || s.pad != 3 || s.cout != 64 {
		t.Errorf("stem = %+v", s)
	}

	// Spatial sizes at 224: 112 after the stem, 56 after the pool, 7 at the end.
	h := n.stem.outSize(224)
	h = (h+2-3)/2 + 1
	for _, b := range n.blocks {
		for _, c := range b.convs {
			h = c.outSize(h)
		}
	}
	if h != 7 {
		t.Errorf("final spatial size at 224 = %d, want 7", h)
	}

	m, _ := buildNetwork(ModelMLP, 0)
	if m.inputLen() != DefaultMLPWidth || len(m.dense) != 3 || m.outputLen() != classes {
		t.Errorf("mlp: input %d, %d layers, output %d", m.inputLen(), len(m.dense), m.outputLen())
	}
}

func TestWeightsDeterministic(t *testing.T) {
	a, _ := buildNetwork(ModelResNet18, 32)
	b, _ := buildNetwork(ModelResNet18, 64) // input size does not change weights
	ca, cb := a.convs(), b.convs()
	for i := range ca {
		for j, v := range ca[i].w {
			if cb[i].w[j] != v {
				t.Fatalf("%s: weight %d differs", ca[i].name, j)
			}
		}
		if ca[i].bn != nil && (ca[i].bn.mean[0] != cb[i].bn.mean[0] || ca[i].bn.variance[0] != cb[i].bn.variance[0]) {
			t.Fatalf("%s: batch norm statistics differ", ca[i].name)
		}
	}
}

// TestFold checks that a conv with folded weights and bias computes the
// same as the conv followed by its batch norm, for every conv shape of
// resnet18.
func TestFold(t *testing.T) {
	n, _ := buildNetwork(ModelResNet18, 32)
	r := rand.New(rand.NewPCG(7, 8))
	seen := map[[4]int]bool{}
	for _, c := range n.convs() {
		key := [4]int{c.cin, c.k, c.stride, c.pad}
		if seen[key] || c.bn == nil {
			continue
		}
		seen[key] = true
		size := 9
		x := refTensor{c: c.cin, h: size, w: size, data: randSlice(r, c.cin*size*size)}
		want := refConv(c, x, nil, 2)

		w, b := fold(c)
		folded := &conv{name: c.name, cin: c.cin, cout: c.cout, k: c.k, stride: c.stride, pad: c.pad, relu: c.relu, w: w, bias: b}
		got := refConv(folded, x, nil, 2)
		for i := range want.data {
			if d := math.Abs(float64(got.data[i] - want.data[i])); d > 1e-4*(1+math.Abs(float64(want.data[i]))) {
				t.Fatalf("%s: element %d: folded %v, conv+bn %v", c.name, i, got.data[i], want.data[i])
			}
		}
	}
	if len(seen) < 4 {
		t.Fatalf("only %d conv shapes checked", len(seen))
	}
}

// TestDevicePathMatchesReference compares the packed device path in fp32
// with the reference on odd input sizes and batches, image by image.
func TestDevicePathMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		model       string
		size, batch int
	}{{ModelResNet18, 37, 3}, {ModelResNet50, 33, 2}, {ModelMLP, 77, 5}} {
		n, err := buildNetwork(tc.model, tc.size)
		if err != nil {
			t.Fatal(err)
		}
		ex := newExecutor(compile(n, false), 2)
		in := make([]float32, tc.batch*n.inputLen())
		fillInput(in, n, 3)
		out := make([]float32, tc.batch*n.outputLen())
		if err := ex.forward(t.Context(), in, tc.batch, out); err != nil {
			t.Fatal(err)
		}
		gold, err := reference(t.Context(), n, in, tc.batch, 2)
		if err != nil {
			t.Fatal(err)
		}
		k := n.outputLen()
		for img := range tc.batch {
			p := device.PCC(out[img*k:(img+1)*k], gold[img*k:(img+1)*k])
			if p < 0.99999 || p >= 1 {
				t.Errorf("%s size %d image %d: PCC %.10f", tc.model, tc.size, img, p)
			}
		}
	}
}

func TestChunkedBatch(t *testing.T) {
	// A batch split into chunks computes the same as one image at a time.
	n, _ := buildNetwork(ModelResNet18, 32)
	p := compile(n, true)
	ex := newExecutor(p, 2)
	const batch = 3
	in := make([]float32, batch*n.inputLen())
	fillInput(in, n, 1)
	all := make([]float32, batch*n.outputLen())
	if err := ex.forward(t.Context(), in, batch, all); err != nil {
		t.Fatal(err)
	}
	k, il := n.outputLen(), n.inputLen()
	for img := range batch {
		one := make([]float32, k)
		if err := ex.forward(t.Context(), in[img*il:(img+1)*il], 1, one); err != nil {
			t.Fatal(err)
		}
		for i := range one {
			if d := math.Abs(float64(one[i] - all[img*k+i])); d > 1e-3*(1+math.Abs(float64(one[i]))) {
				t.Fatalf("image %d output %d: alone %v, in batch %v", img, i, one[i], all[img*k+i])
			}
		}
	}
}

func BenchmarkResNet50(b *testing.B) {
	if testing.Short() {
		b.Skip("ResNet-50 at 224 is slow; skipped in -short")
	}
	for _, format := range []string{protocol.FormatFloat32, protocol.FormatBfloat16} {
		b.Run(format, func(b *testing.B) {
			n, err := buildNetwork(ModelResNet50, 224)
			if err != nil {
				b.Fatal(err)
			}
			ex := newExecutor(compile(n, format == protocol.FormatBfloat16), defaultThreads())
			in := make([]float32, n.inputLen())
			fillInput(in, n, 0)
			out := make([]float32, n.outputLen())
			if err := ex.forward(b.Context(), in, 1, out); err != nil { // warm the buffers
				b.Fatal(err)
			}
			var total time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := ex.forward(b.Context(), in, 1, out); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(b.N)/total.Seconds(), "images/s")
			b.ReportMetric(2*4.09e9*float64(b.N)/total.Seconds()/1e9, "GFLOP/s")
		})
	}
}

func TestLogsSummarized(t *testing.T) {
	rec := &recorder{}
	job := testJob(ModelMLP, protocol.FormatFloat32, 1, 200, 2, 64)
	if _, err := newRunner(t).Run(t.Context(), job, device.Device{}, rec); err != nil {
		t.Fatal(err)
	}
	var iterLines int
	for _, l := range rec.logs {
		if strings.HasPrefix(l, "Iteration ") {
			iterLines++
		}
	}
	if iterLines == 0 || iterLines > 20 {
		t.Fatalf("%d iteration lines for 200 iterations, want a summary (1..20)", iterLines)
	}
}
