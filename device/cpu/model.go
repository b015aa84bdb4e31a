package cpu

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Model names the engine knows.
const (
	ModelResNet50 = "resnet50"
	ModelResNet18 = "resnet18"
	ModelMLP      = "mlp"
)

// Models lists the models of the cpu runner.
var Models = []string{ModelResNet50, ModelResNet18, ModelMLP}

// Defaults and limits of Benchmark.InputSize per model kind.
const (
	DefaultImageSize = 224  // 3x224x224
	MinImageSize     = 32   // five stride-2 stages must leave at least 1x1
	MaxImageSize     = 1024 // bounds activation memory of one image
	DefaultMLPWidth  = 1024
	MaxMLPWidth      = 16384
	classes          = 1000
	bnEpsilon        = 1e-5
)

// batchNorm holds inference-time batch-norm parameters of one conv.
type batchNorm struct {
	gamma, beta, mean, variance []float32
}

// conv is a convolution (or, with k=1 on a 1x1 input, a dense layer) with
// its original (unfolded) weights and optional batch norm and bias.
type conv struct {
	name                      string
	cin, cout, k, stride, pad int
	w                         []float32 // [cout][cin][k][k]
	bn                        *batchNorm
	bias                      []float32 // [cout], or nil
	relu                      bool      // ReLU after (and after the residual add, for the last conv of a block)
}

func (c *conv) outSize(h int) int { return (h+2*c.pad-c.k)/c.stride + 1 }

// params counts trainable parameters (weights, bias, BN gamma and beta).
func (c *conv) params() int {
	n := len(c.w) + len(c.bias)
	if c.bn != nil {
		n += 2 * c.cout
	}
	return n
}

// block is a residual block: basic (c1, c2) or bottleneck (c1, c2, c3),
// with an optional downsample conv on the shortcut. The last conv's ReLU
// is applied after the residual add.
type block struct {
	convs []*conv
	down  *conv
}

// network is a model graph with its synthetic weights.
type network struct {
	name   string
	vision bool
	// Vision: input channels and spatial size; stem conv + max pool, blocks,
	// global average pool, fc.
	inC, size int
	stem      *conv
	blocks    []*block
	// fc for vision; every layer for mlp. Dense layers are 1x1 convs.
	dense []*conv
	// width is the mlp input width.
	width int
}

// convs returns every conv of the network in execution order.
func (n *network) convs() []*conv {
	var out []*conv
	if n.stem != nil {
		out = append(out, n.stem)
	}
	for _, b := range n.blocks {
		out = append(out, b.convs...)
		if b.down != nil {
			out = append(out, b.down)
		}
	}
	return append(out, n.dense...)
}

// params counts the trainable parameters of the network.
func (n *network) params() int {
	var p int
	for _, c := range n.convs() {
		p += c.params()
	}
	return p
}

// inputLen is the number of floats of one input sample.
func (n *network) inputLen() int {
	if n.vision {
		return n.inC * n.size * n.size
	}
	return n.width
}

// outputLen is the number of floats of one output sample.
func (n *network) outputLen() int { return n.dense[len(n.dense)-1].cout }

// checkModel validates a model and input size without building weights.
func checkModel(model string, inputSize int) error {
	switch model {
	case ModelResNet50, ModelResNet18:
		if inputSize != 0 && (inputSize < MinImageSize || inputSize > MaxImageSize) {
			return fmt.Errorf("input_size %d out of range for %s (%d to %d)", inputSize, model, MinImageSize, MaxImageSize)
		}
	case ModelMLP:
		if inputSize > MaxMLPWidth {
			return fmt.Errorf("input_size %d out of range for %s (1 to %d)", inputSize, model, MaxMLPWidth)
		}
	default:
		return fmt.Errorf("unknown model %q (the cpu runner has %v)", model, Models)
	}
	return nil
}

// buildNetwork builds the graph of model with deterministic synthetic
// weights: the same model always gets the same weights, whatever the input
// size (weights do not depend on it).
func buildNetwork(model string, inputSize int) (*network, error) {
	if err := checkModel(model, inputSize); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte(model))
	n := buildGraph(&weightGen{r: rand.New(rand.NewPCG(h.Sum64(), 0x62656e6368666c74))}, model, inputSize)
	if n.vision {
		calibrated(n)
	}
	return n, nil
}

// buildShape builds the graph of model without weights (every weight,
// bias and batch-norm slice is nil; the shapes are those of buildNetwork),
// for sizing a run without paying for it.
func buildShape(model string, inputSize int) (*network, error) {
	if err := checkModel(model, inputSize); err != nil {
		return nil, err
	}
	return buildGraph(&weightGen{}, model, inputSize), nil
}

// buildGraph builds the graph of a checked model with g's weights.
func buildGraph(g *weightGen, model string, inputSize int) *network {
	switch model {
	case ModelResNet50:
		return buildResNet(g, model, []int{3, 4, 6, 3}, true, sizeOr(inputSize, DefaultImageSize))
	case ModelResNet18:
		return buildResNet(g, model, []int{2, 2, 2, 2}, false, sizeOr(inputSize, DefaultImageSize))
	default:
		return buildMLP(g, sizeOr(inputSize, DefaultMLPWidth))
	}
}

func sizeOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// buildResNet builds torchvision's ResNet v1.5: the stride of a
// downsampling bottleneck is on its 3x3 conv, the shortcut is a strided
// 1x1 conv + BN.
func buildResNet(g *weightGen, name string, layers []int, bottleneck bool, size int) *network {
	n := &network{name: name, vision: true, inC: 3, size: size}
	n.stem = g.conv("conv1", 3, 64, 7, 2, 3, true, false)
	inC := 64
	expansion := 1
	if bottleneck {
		expansion = 4
	}
	for li, blocks := range layers {
		width := 64 << li
		for bi := range blocks {
			stride := 1
			if bi == 0 && li > 0 {
				stride = 2
			}
			prefix := fmt.Sprintf("layer%d.%d", li+1, bi)
			b := &block{}
			out := width * expansion
			if bottleneck {
				b.convs = []*conv{
					g.conv(prefix+".conv1", inC, width, 1, 1, 0, true, false),
					g.conv(prefix+".conv2", width, width, 3, stride, 1, true, false),
					g.conv(prefix+".conv3", width, out, 1, 1, 0, true, true),
				}
			} else {
				b.convs = []*conv{
					g.conv(prefix+".conv1", inC, width, 3, stride, 1, true, false),
					g.conv(prefix+".conv2", width, out, 3, 1, 1, true, true),
				}
			}
			if stride != 1 || inC != out {
				b.down = g.conv(prefix+".downsample", inC, out, 1, stride, 0, false, false)
			}
			n.blocks = append(n.blocks, b)
			inC = out
		}
	}
	fc := g.dense("fc", inC, classes, false)
	n.dense = []*conv{fc}
	return n
}

// buildMLP builds width → 2048 → 2048 → 1000 with ReLU between layers.
func buildMLP(g *weightGen, width int) *network {
	n := &network{name: ModelMLP, width: width}
	n.dense = []*conv{
		g.dense("fc1", width, 2048, true),
		g.dense("fc2", 2048, 2048, true),
		g.dense("fc3", 2048, classes, false),
	}
	return n
}

// weightGen draws synthetic weights from one seeded stream. With a nil
// stream it draws nothing: every slice is nil (a graph without weights).
type weightGen struct{ r *rand.Rand }

func (g *weightGen) normal(n int, std float64) []float32 {
	if g.r == nil {
		return nil
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(g.r.NormFloat64() * std)
	}
	return s
}

func (g *weightGen) uniform(n int, lo, hi float64) []float32 {
	if g.r == nil {
		return nil
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(lo + (hi-lo)*g.r.Float64())
	}
	return s
}

// conv returns a conv + BN with He-normal weights (std sqrt(2/fan_in)) and
// non-trivial BN parameters: gamma around 1 (around 0.3 for the last conv
// of a residual branch, so the residual stream grows slowly as in a
// trained network), small beta; mean and variance are placeholders until
// calibrated replaces them with the statistics the conv really produces.
func (g *weightGen) conv(name string, cin, cout, k, stride, pad int, relu, branchEnd bool) *conv {
	fanIn := cin * k * k
	c := &conv{name: name, cin: cin, cout: cout, k: k, stride: stride, pad: pad, relu: relu,
		w: g.normal(cout*fanIn, math.Sqrt(2/float64(fanIn)))}
	glo, ghi := 0.7, 1.3
	if branchEnd {
		glo, ghi = 0.2, 0.4
	}
	c.bn = &batchNorm{
		gamma:    g.uniform(cout, glo, ghi),
		beta:     g.normal(cout, 0.05),
		mean:     g.normal(cout, 0.05),
		variance: g.uniform(cout, 0.6, 1.4),
	}
	return c
}

// dense returns a fully connected layer (as a 1x1 conv) with bias.
func (g *weightGen) dense(name string, in, out int, relu bool) *conv {
	return &conv{name: name, cin: in, cout: out, k: 1, stride: 1, relu: relu,
		w:    g.normal(out*in, math.Sqrt(2/float64(in))),
		bias: g.normal(out, 0.05)}
}

// calibSize is the image size batch-norm statistics are calibrated at,
// whatever the job's input size, so a model's weights never depend on it.
const calibSize = 64

// calibrated sets every batch norm's running mean and variance to the
// statistics of its conv's output on one seeded random image (BN
// recalibration), so activations stay normalized through the depth of the
// network as in a trained one. It returns n.
func calibrated(n *network) *network {
	size := n.size
	n.size = calibSize
	defer func() { n.size = size }()
	in := make([]float32, n.inputLen())
	r := rand.New(rand.NewPCG(0x63616c6962, 1))
	for i := range in {
		in[i] = float32(r.NormFloat64())
	}
	threads := defaultThreads()
	var bufs refBuffers
	_, _ = refForward(context.Background(), n, in, &bufs, func(c *conv, x refTensor, residual []float32, y refTensor) {
		oh, ow := y.h, y.w
		nw := min(threads, c.cout)
		bufs.reserveAccs(nw, oh*ow)
		parallelW(nw, c.cout, func(w, lo, hi int) {
			acc := bufs.accs[w][:oh*ow]
			for co := lo; co < hi; co++ {
				refConvChannel(c, x, co, oh, ow, acc)
				if c.bn != nil {
					var s, ss float64
					for _, v := range acc {
						s += v
						ss += v * v
					}
					mean := s / float64(len(acc))
					c.bn.mean[co] = float32(mean)
					c.bn.variance[co] = float32(max(ss/float64(len(acc))-mean*mean, 1e-4))
				}
				refFinish(c, co, acc, residual, y.data[co*oh*ow:(co+1)*oh*ow])
			}
		})
	})
	return n
}
