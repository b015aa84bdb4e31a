// Package cpu is the cpu runner: benchfleet's built-in reference engine,
// an inference engine in Go that runs the same benchmark shape as the
// upstream Tenstorrent harness (compile, warmup, timed loop, PCC against a
// golden output) on the host CPU. It needs no accelerator, no cgo and no
// downloaded weights, so it is the embedded default for demos and tests
// and a stable baseline for the fleet machinery.
//
// # Models
//
// resnet50 (torchvision's ResNet-50 v1.5: stride on the 3x3 conv of a
// downsampling bottleneck, 53 convs including the 4 downsample shortcuts,
// one fc, 25.56M parameters, 3x224x224 input, 1000 classes), resnet18
// (basic blocks, 11.69M parameters) and mlp (width → 2048 → 2048 → 1000
// with ReLU; the width is Benchmark.InputSize, default 1024).
// Benchmark.InputSize sets the image size of the resnets (32 to 1024,
// default 224), which keeps tests fast.
//
// Weights are synthetic and deterministic: He-normal convs, random batch-norm
// gamma and beta drawn from a stream seeded by the model name, and running
// mean and variance calibrated on one seeded 64x64 image (the statistics
// each conv really produces), so activations stay normalized through the
// depth of the network as in a trained one and every run of a model
// computes the same function. Inputs are standard normal "Random Data",
// one seeded stream per iteration.
//
// # Device path
//
// compile folds each batch norm into its conv's weights and bias (float64
// arithmetic, one rounding to float32) and packs the weights into the
// GEMM's panel layout. For bfloat16 the folded weights, the input and
// every layer's output are rounded to bfloat16 (round to nearest even on
// the fp32 bits); products accumulate in fp32, as on the device.
//
// Activations are CNHW (channel outermost) so that a 1x1 conv over a whole
// chunk of images is one GEMM and other convs are a GEMM over an im2col
// that is packed on the fly, never materialized. Bias, residual add, ReLU
// and the bf16 rounding are fused into the GEMM epilogue. A batch runs in
// chunks of images bounded to a ~96 MiB working set.
//
// The GEMM is Goto-style: weights packed once in 16-row panels, B packed
// per call in 6-column panels, tiles of 128×192 outputs accumulated over
// K in slices of 256 and handed to worker goroutines (GOMAXPROCS by
// default). The 16×6 micro-kernel is AVX2+FMA assembly on amd64 CPUs that
// have it; elsewhere, or with -tags purego, a portable Go kernel that
// walks the tile in 4×2 register blocks (larger blocks make the Go
// compiler spill).
//
// # Memory
//
// A run holds the weights twice (the original ones for the golden path,
// the folded and packed ones for the device path), one batch of input
// (batch × input floats, refilled every iteration rather than loop_count
// tensors as upstream), the executor's recycled activations for one chunk,
// the GEMM's packed B for the largest layer of a chunk, and the golden
// path's recycled tensors for one image. Both paths reuse their buffers
// instead of leaving garbage, so the peak is close to the sum, which
// EstimateBytes computes from the graph (TestEstimateBoundsMeasuredPeak
// holds it against the peak resident memory of real runs). The input is
// what grows: resnet50 at batch 4096 and input_size 1024 needs about 49 GiB.
//
// Check refuses, as invalid, a job whose estimate is over its budget:
// MaxJobBytes (8 GiB) at submit, where the host is unknown, and on a
// worker the smaller of MaxJobBytes and HostMemoryFraction (half) of the
// host's MemTotal. The error names the estimate, the limit and the largest
// batch_size that fits at the job's input_size (or says to lower
// input_size). The budget is per job: a worker with several cpu slots may
// run that many such jobs at once.
//
// # Golden path
//
// The golden output comes from an independent reference: one image at a
// time in NCHW, direct convolution with float64 accumulation, batch norm
// applied unfolded from the running statistics, float32 activations. The
// PCC of a float32 run is therefore just below 1 (different summation
// order and folding; about 1 - 1e-12), and a bfloat16 run shows a real
// accuracy loss (resnet50: about 0.9999 at 224, 0.9997 at 32).
package cpu
