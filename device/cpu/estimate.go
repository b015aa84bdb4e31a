package cpu

import (
	"fmt"
	"slices"

	"github.com/benchfleet/benchfleet/protocol"
)

// EstimateBytes returns an upper bound of the memory, in bytes, that a run
// of b takes on the cpu runner (Run with GOMAXPROCS threads) on top of what
// the process held before. It is computed from the model's graph without
// building weights, so it is cheap enough for every Check. It returns an
// error when b's model or input size is not one the runner takes, or its
// batch size or loop count is not positive.
//
// The estimate is the sum of what a run allocates, all float32 whatever
// the data format:
//
//   - weights: the original weights and batch-norm parameters of every
//     layer (the golden path reads them), and their folded copies packed
//     in 16-row panels (the device path);
//   - compile: the buffer that holds one layer's folded weights and the
//     batch-norm calibration's tensors (one image at 64x64);
//   - io: the batch's input (batch × input floats: one tensor refilled per
//     iteration, not loop_count tensors as upstream keeps), the output, the
//     first timed output and the golden output (batch × 1000 each);
//   - activations: the executor's recycled buffers for a chunk of images,
//     counted by replaying the executor's allocations on the graph;
//   - GEMM scratch: the packed B panels of the largest GEMM of a chunk and
//     one accumulator tile per thread;
//   - golden: the golden path's recycled tensors for one image and one
//     float64 accumulator plane per thread;
//   - timings: 16 bytes per timed iteration;
//   - runtimeSlack for the runtime and the run's small allocations.
//
// Every part but compile lives until Run returns, and the engine recycles
// its buffers instead of leaving garbage, so the peak is close to the sum
// whatever the collector does (TestEstimateBoundsMeasuredPeak measures it
// against the peak resident memory of real runs).
func EstimateBytes(b protocol.Benchmark) (int64, error) {
	fp, err := estimateBenchmark(b, defaultThreads())
	if err != nil {
		return 0, err
	}
	return fp.total(), nil
}

// estimateBenchmark checks what the estimate needs of b and sizes a run of
// it with threads goroutines.
func estimateBenchmark(b protocol.Benchmark, threads int) (footprint, error) {
	if err := checkModel(b.Model, b.InputSize); err != nil {
		return footprint{}, err
	}
	if b.BatchSize <= 0 || b.LoopCount <= 0 {
		return footprint{}, fmt.Errorf("batch_size and loop_count must be positive (got %d and %d)", b.BatchSize, b.LoopCount)
	}
	n, err := buildShape(b.Model, b.InputSize)
	if err != nil {
		return footprint{}, err
	}
	return estimate(n, b.BatchSize, b.LoopCount, threads), nil
}

// runtimeSlack is what EstimateBytes adds for the Go runtime's share of a
// run (goroutine stacks, span rounding) and its small allocations (graph,
// logs, random streams).
const runtimeSlack = 16 << 20

// footprint is the memory of a run by part, in bytes.
type footprint struct {
	weights     int64 // original weights and batch-norm parameters
	packed      int64 // folded, packed weights and folded biases
	compile     int64 // fold buffer and calibration tensors
	io          int64 // input, output, first output, golden output
	activations int64 // the executor's buffers
	scratch     int64 // GEMM packed B and tiles
	golden      int64 // the golden path's buffers and accumulators
	timings     int64 // iteration durations and their sorted copy
}

// total is the sum of the parts and runtimeSlack.
func (f footprint) total() int64 {
	return f.weights + f.packed + f.compile + f.io + f.activations + f.scratch + f.golden + f.timings + runtimeSlack
}

// estimate sizes a run of n (a graph from buildShape or buildNetwork) at
// batch with loop timed iterations and threads goroutines.
func estimate(n *network, batch, loop, threads int) footprint {
	const f32 = 4
	threads = max(1, threads)
	var fp footprint
	for _, c := range n.convs() {
		k := c.cin * c.k * c.k
		// Every conv has either a batch norm (gamma, beta, mean, variance)
		// or, as a dense layer, a bias.
		extra := c.cout
		if c.bn != nil {
			extra = 4 * c.cout
		}
		fp.weights += f32 * int64(c.cout*k+extra)
		fp.packed += f32 * int64((c.cout+mr-1)/mr*mr*k+c.cout)
	}
	fp.compile = f32 * int64(foldBufLen(n))
	if n.vision {
		size := n.size
		n.size = calibSize
		tensors, accs := goldenFloats(n, threads)
		fp.compile += f32*(int64(n.inputLen())+tensors) + 8*accs
		n.size = size
	}
	chunk := (&plan{net: n}).chunkSize(batch)
	inLen, outLen := int64(n.inputLen()), int64(n.outputLen())
	fp.io = f32 * int64(batch) * (inLen + 3*outLen)
	fp.activations = f32 * replayBuffers(func(r *bufferReplay) {
		for b0 := 0; b0 < batch; b0 += chunk {
			r.forward(n, min(chunk, batch-b0), true)
		}
	})
	fp.scratch = f32 * (int64(packedBFloats(n, chunk)) + int64(threads)*mcBlock*ncBlock)
	tensors, accs := goldenFloats(n, threads)
	fp.golden = f32*tensors + 8*accs
	fp.timings = 16 * int64(loop)
	return fp
}

// goldenFloats returns the float32s of the golden path's recycled tensors
// and the float64s of its accumulators, for one image after another.
func goldenFloats(n *network, threads int) (tensors, accs int64) {
	tensors = replayBuffers(func(r *bufferReplay) {
		r.put(r.forward(n, 1, false))
	})
	// Replay refBuffers.reserveAccs over the convs.
	var caps []int
	walkConvs(n, func(c *conv, h int) {
		nw := min(threads, c.cout)
		for len(caps) < nw {
			caps = append(caps, 0)
		}
		for w := range nw {
			caps[w] = max(caps[w], h*h)
		}
	})
	for _, c := range caps {
		accs += int64(c)
	}
	return tensors, accs
}

// packedBFloats is the length of the GEMM's packed B for the largest GEMM
// of a chunk of chunk images.
func packedBFloats(n *network, chunk int) int {
	var most int
	walkConvs(n, func(c *conv, h int) {
		most = max(most, packedBLen(c.cin*c.k*c.k, chunk*h*h))
	})
	return most
}

// walkConvs calls fn for every conv of n in execution order with the
// spatial size of its output (1 for dense layers).
func walkConvs(n *network, fn func(c *conv, outSize int)) {
	if n.vision {
		h := n.stem.outSize(n.size)
		fn(n.stem, h)
		h = (h+2-3)/2 + 1
		for _, b := range n.blocks {
			if b.down != nil {
				fn(b.down, b.down.outSize(h))
			}
			for _, c := range b.convs {
				h = c.outSize(h)
				fn(c, h)
			}
		}
	}
	for _, d := range n.dense {
		fn(d, 1)
	}
}

// replayBuffers returns the floats a buffer pool (the executor's or the
// golden path's: first fit, swap-remove) holds after run replays its get
// and put calls, run after run, until the pool reaches a fixed point (the
// engine runs the same sequence every iteration or image).
func replayBuffers(run func(r *bufferReplay)) int64 {
	var r bufferReplay
	for range 64 {
		before := r.total
		free := slices.Clone(r.free)
		run(&r)
		if r.total == before && slices.Equal(free, r.free) {
			break
		}
	}
	return r.total
}

// bufferReplay mirrors executor.get and executor.put (and refBuffers') on
// capacities.
type bufferReplay struct {
	free  []int // capacities of the recycled buffers, in pool order
	total int64 // floats allocated
}

func (r *bufferReplay) get(n int) int {
	for i, c := range r.free {
		if c >= n {
			r.free[i] = r.free[len(r.free)-1]
			r.free = r.free[:len(r.free)-1]
			return c
		}
	}
	r.total += int64(n)
	return n
}

// put recycles a buffer; a negative capacity is the caller's input, not
// the pool's.
func (r *bufferReplay) put(c int) {
	if c >= 0 {
		r.free = append(r.free, c)
	}
}

// forward replays one pass of nb images: executor.forwardChunk when
// pooledInput (the executor copies the input into a buffer of its pool and
// puts back its output), refForward for one image otherwise (the input is
// the caller's; the output is returned). It returns the output's capacity.
func (r *bufferReplay) forward(n *network, nb int, pooledInput bool) int {
	x := -1
	if pooledInput {
		x = r.get(n.inputLen() * nb)
	}
	if n.vision {
		h := n.stem.outSize(n.size)
		y := r.get(n.stem.cout * nb * h * h)
		r.put(x)
		h = (h+2-3)/2 + 1
		x = r.get(n.stem.cout * nb * h * h)
		r.put(y)
		for _, b := range n.blocks {
			short := -1
			if b.down != nil {
				oh := b.down.outSize(h)
				short = r.get(b.down.cout * nb * oh * oh)
			}
			y, hh := x, h
			for i, c := range b.convs {
				hh = c.outSize(hh)
				z := r.get(c.cout * nb * hh * hh)
				if i > 0 {
					r.put(y)
				}
				y = z
			}
			r.put(short)
			r.put(x)
			x, h = y, hh
		}
		y = r.get(n.dense[0].cin * nb) // the global average pool
		r.put(x)
		x = y
	}
	for _, d := range n.dense {
		y := r.get(d.cout * nb)
		r.put(x)
		x = y
	}
	if pooledInput {
		r.put(x)
		return -1
	}
	return x
}
