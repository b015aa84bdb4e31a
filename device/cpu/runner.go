package cpu

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// Config configures a Runner.
type Config struct {
	// Threads is the number of goroutines a run uses for its GEMMs and the
	// golden reference. 0 means runtime.GOMAXPROCS(0), read at each run.
	Threads int
}

// Runner is the cpu runner: the built-in reference engine. It is safe for
// concurrent use; each Run builds its own network.
type Runner struct {
	cfg Config
}

// New returns a cpu runner. It returns an error naming the field when cfg
// is invalid.
func New(cfg Config) (*Runner, error) {
	if cfg.Threads < 0 {
		return nil, fmt.Errorf("cpu: Config.Threads must be >= 0 (got %d)", cfg.Threads)
	}
	return &Runner{cfg: cfg}, nil
}

// Name implements device.Runner: protocol.RunnerCPU.
func (*Runner) Name() string { return protocol.RunnerCPU }

// Check implements device.Runner. It rejects unknown models, input sizes
// the model cannot take (resnet: 32 to 1024; mlp: up to 16384), training,
// which the harness does not support, and a job whose run would need more
// memory (EstimateBytes, with the runner's threads) than this host's
// budget: the smaller of MaxJobBytes and HostMemoryFraction of the host's
// memory.
func (r *Runner) Check(b protocol.Benchmark) error {
	if err := checkShape(b); err != nil {
		return err
	}
	return checkBudget(b, r.threads(), hostBudget(hostMemory()))
}

// checkKind is the registered kind's Check (submit, no host): the runner's
// checks with MaxJobBytes as the budget and this process's GOMAXPROCS as
// the threads.
func checkKind(b protocol.Benchmark) error {
	if err := checkShape(b); err != nil {
		return err
	}
	return checkBudget(b, defaultThreads(), submitBudget)
}

// threads is the number of goroutines a run uses.
func (r *Runner) threads() int {
	if r.cfg.Threads == 0 {
		return defaultThreads()
	}
	return r.cfg.Threads
}

// checkShape is Check without the memory budget.
func checkShape(b protocol.Benchmark) error {
	if b.Training {
		return device.Invalid("training is not supported")
	}
	if b.InputSize < 0 {
		return device.Invalid("input_size must be >= 0 (got %d)", b.InputSize)
	}
	if err := checkModel(b.Model, b.InputSize); err != nil {
		return device.Invalid("cpu: %v", err)
	}
	if b.DataFormat != "" && b.DataFormat != protocol.FormatFloat32 && b.DataFormat != protocol.FormatBfloat16 {
		return device.Invalid("data_format must be float32 or bfloat16 (got %q)", b.DataFormat)
	}
	if b.BatchSize <= 0 || b.LoopCount <= 0 || b.WarmupCount < 0 {
		return device.Invalid("batch_size and loop_count must be positive, warmup_count non-negative")
	}
	return nil
}

// collectFirstBytes is the estimate from which Run collects garbage before
// it allocates: left to the collector's pacing, a previous run's garbage
// could share the heap with a run this large.
const collectFirstBytes = 1 << 30

// How many per-iteration log lines a run writes in full; the rest are
// summarized (upstream prints every iteration, which floods long runs).
const logIterations = 5

// Run implements device.Runner. Phases:
//
//   - compile: build the graph with its synthetic weights, fold batch norm
//     into the convs, round to bfloat16 if asked, pack the weights.
//   - warmup: warmup_count iterations.
//   - timing: loop_count iterations of batch_size samples, each timed on
//     its own (the input of an iteration is generated before its clock
//     starts).
//   - pcc: the golden output of the first timed input on the independent
//     reference path, compared with the first timed output.
//
// Inputs are "Random Data" like upstream's, but instead of holding
// loop_count tensors the input of iteration i is drawn from a seed derived
// from the model, input size and i, so memory stays bounded and the same
// job sees the same inputs on every run and data format. Warmup iteration
// i uses the input of timed iteration i mod loop_count.
//
// Run does not judge the PCC (the worker compares it with the job's
// pcc_min); it returns ctx's error promptly when ctx is cancelled.
func (r *Runner) Run(ctx context.Context, job *protocol.Job, dev device.Device, rec device.Recorder) (*device.Outcome, error) {
	b := job.Benchmark
	if b.WarmupCount == 0 {
		b.WarmupCount = min(32, b.LoopCount)
	}
	if b.DataFormat == "" {
		b.DataFormat = protocol.FormatBfloat16
	}
	// Check's checks, with the estimate made once for the budget and the log.
	if err := checkShape(b); err != nil {
		return nil, err
	}
	threads := r.threads()
	fp, err := estimateBenchmark(b, threads)
	if err != nil {
		return nil, device.Invalid("cpu: %v", err)
	}
	lim := hostBudget(hostMemory())
	if err := overBudget(b, fp, threads, lim); err != nil {
		return nil, err
	}
	bf16 := b.DataFormat == protocol.FormatBfloat16

	rec.Phase(device.PhaseCompile)
	start := time.Now()
	rec.Log(fmt.Sprintf("cpu: estimated memory %s (limit %s: %s)", formatBytes(fp.total()), formatBytes(lim.bytes), lim.reason))
	if fp.total() >= collectFirstBytes {
		// The garbage of the slot's previous run may not be collected
		// yet; this run's estimate does not count it.
		runtime.GC()
	}
	net, err := buildNetwork(b.Model, b.InputSize)
	if err != nil {
		return nil, device.Invalid("cpu: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := compile(net, bf16)
	ex := newExecutor(p, threads)
	rec.Log(fmt.Sprintf("cpu: compiled %s (%s) on %s: %d layers, %.2fM parameters, input %s, batch %d (chunks of %d), kernel %s, %d threads, in %.3fs",
		net.name, b.DataFormat, dev.ID, len(net.convs()), float64(net.params())/1e6, net.shape(), b.BatchSize,
		p.chunkSize(b.BatchSize), kernelName, threads, time.Since(start).Seconds()))

	inLen, outLen := net.inputLen(), net.outputLen()
	in := make([]float32, b.BatchSize*inLen)
	out := make([]float32, b.BatchSize*outLen)

	rec.Phase(device.PhaseWarmup)
	start = time.Now()
	for i := range b.WarmupCount {
		fillInput(in, net, i%b.LoopCount)
		if err := ex.forward(ctx, in, b.BatchSize, out); err != nil {
			return nil, err
		}
	}
	rec.Log(fmt.Sprintf("Warmup: %d iterations in %.3fs", b.WarmupCount, time.Since(start).Seconds()))

	rec.Phase(device.PhaseTiming)
	iters := make([]time.Duration, 0, b.LoopCount)
	var first []float32
	every := max(1, b.LoopCount/10)
	for i := range b.LoopCount {
		fillInput(in, net, i)
		t0 := time.Now()
		if err := ex.forward(ctx, in, b.BatchSize, out); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		iters = append(iters, d)
		if i == 0 {
			first = append([]float32(nil), out...)
		}
		if i < logIterations || i%every == 0 || i == b.LoopCount-1 {
			rec.Log(fmt.Sprintf("Iteration %d took %.3f ms", i, float64(d)/float64(time.Millisecond)))
		}
	}
	m := device.Measure(b.BatchSize, iters)
	rec.Log(fmt.Sprintf("Total time: %.4fs for %d iterations", m.TotalTimeS, b.LoopCount))
	rec.Log(fmt.Sprintf("Samples per second: %.2f (batch %d, iteration p50 %.3f ms)", m.SamplesPerSec, b.BatchSize, m.IterationMS.P50))

	rec.Phase(device.PhasePCC)
	start = time.Now()
	fillInput(in, net, 0)
	golden, err := reference(ctx, net, in, b.BatchSize, threads)
	if err != nil {
		return nil, err
	}
	pcc := device.PCC(first, golden)
	rec.Log(fmt.Sprintf("PCC: %.10f (first timed output vs fp32 golden, %d values, in %.3fs)", pcc, len(golden), time.Since(start).Seconds()))
	return &device.Outcome{Measurements: m, PCCValue: pcc}, nil
}

// shape describes one input sample, like upstream's image_dimension.
func (n *network) shape() string {
	if n.vision {
		return fmt.Sprintf("%dx%dx%d", n.inC, n.size, n.size)
	}
	return fmt.Sprintf("%d", n.width)
}

// fillInput fills in with the standard-normal input of iteration i.
func fillInput(in []float32, n *network, i int) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/input", n.name, n.shape())
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	for j := range in {
		in[j] = float32(r.NormFloat64())
	}
}

func init() {
	device.Register(device.Kind{
		Name: protocol.RunnerCPU, Builtin: true, Summary: "the built-in reference engine (pure Go ResNet-50, ResNet-18, MLP)",
		Check: checkKind,
		New: func(device.Settings, zerolog.Logger) (device.Runner, error) {
			return New(Config{})
		},
	})
}
