package cpu

import (
	"fmt"

	"github.com/benchfleet/benchfleet/protocol"
)

// EstimateBytes returns an upper bound of the memory, in bytes, that a run
// of b takes on the cpu runner beyond what the process held before: the
// peak Go heap of Run with the garbage collector at its default setting
// (GOGC=100, no GOMEMLIMIT). It is computed from the model's graph without
// building weights, so it is cheap enough for every Check. It returns an
// error when b's model or input size is not one the runner takes, or its
// batch size is not positive.
//
// What a run keeps alive (float32 throughout, whatever the data format):
//
//   - weights: the original weights and batch-norm parameters of every
//     layer (the golden path uses them) and their folded, packed copies
//     (the device path), padded to whole 16-row panels;
//   - io: the batch's input (batch × input floats; one tensor, refilled
//     every iteration, not loop_count tensors as upstream), its output, the
//     first timed output and the golden output (batch × 1000 floats each);
//   - activations: the executor's recycled buffers for one chunk of images,
//     counted by replaying the executor's allocations on the graph;
//   - GEMM scratch: the packed B panels of the largest GEMM of a chunk and
//     one accumulator tile per thread.
//
// Compiling (one folded copy of a layer at a time) and the golden path (one
// image at a time, fresh tensors per layer) make garbage on top of that
// live set; the collector lets the heap grow by up to the live heap before
// it reclaims garbage, so each phase counts its live set plus the smaller
// of its garbage and that live set.
func EstimateBytes(b protocol.Benchmark) (int64, error) {
	if err := checkModel(b.Model, b.InputSize); err != nil {
		return 0, err
	}
	if b.BatchSize <= 0 {
		return 0, fmt.Errorf("batch_size must be positive (got %d)", b.BatchSize)
	}
	n, err := buildShape(b.Model, b.InputSize)
	if err != nil {
		return 0, err
	}
	return estimate(n, b.BatchSize, defaultThreads()).total(), nil
}

// footprint is the memory of a run by part, in bytes.
type footprint struct {
	weights, packed int64 // original and compiled weights
	io              int64 // input, output, first output, golden output
	activations     int64 // the executor's buffers
	scratch         int64 // GEMM packed B and tiles
	compileGarbage  int64 // folded weights and calibration tensors
	refLive         int64 // the golden path's live tensors of one image
	refGarbage      int64 // the golden path's allocations over the batch
}

// total is the peak heap: the larger of the compile phase and the run
// (warmup, timing and golden) phases, each its live set plus the garbage
// the collector may let accumulate on it (at most the live set).
func (f footprint) total() int64 {
	compileLive := f.weights + f.packed
	compile := compileLive + min(f.compileGarbage, compileLive)
	runLive := f.weights + f.packed + f.io + f.activations + f.scratch + f.refLive
	run := runLive + min(f.refGarbage, runLive)
	return max(compile, run)
}

// estimate sizes a run of n (a graph from buildShape or buildNetwork) at
// batch with threads goroutines.
func estimate(n *network, batch, threads int) footprint {
	const f32 = 4
	var fp footprint
	for _, c := range n.convs() {
		k := c.cin * c.k * c.k
		w := int64(c.cout * k)
		// Every conv has either a batch norm (gamma, beta, mean, variance)
		// or, as a dense layer, a bias.
		extra := int64(c.cout)
		if c.bn != nil {
			extra = 4 * int64(c.cout)
		}
		fp.weights += f32 * (w + extra)
		fp.packed += f32 * (int64((c.cout+mr-1)/mr*mr*k) + int64(c.cout))
		fp.compileGarbage += f32 * w
	}
	p := &plan{net: n}
	chunk := p.chunkSize(batch)
	inLen, outLen := int64(n.inputLen()), int64(n.outputLen())
	fp.io = f32 * int64(batch) * (inLen + 3*outLen)
	fp.activations = f32 * replayActivations(n, batch, chunk)
	fp.scratch = f32 * (packedBFloats(n, chunk) + int64(threads)*mcBlock*ncBlock)
	live, garbage := refImage(n, threads)
	fp.refLive = f32 * live
	fp.refGarbage = f32 * garbage * int64(batch)
	if n.vision {
		// Calibration runs the golden path once at calibSize.
		size := n.size
		n.size = calibSize
		_, cg := refImage(n, threads)
		n.size = size
		fp.compileGarbage += f32 * (cg + int64(n.inC*calibSize*calibSize))
	}
	return fp
}

// packedBFloats is the size of the GEMM's packed B for the largest GEMM of
// a chunk of chunk images: ⌈N/nr⌉·nr columns of K rows.
func packedBFloats(n *network, chunk int) int64 {
	var most int64
	walkConvs(n, func(c *conv, h int) {
		cols := chunk * h * h
		most = max(most, int64((cols+nr-1)/nr*nr*c.cin*c.k*c.k))
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

// refImage returns the floats the golden path holds at most at once for
// one image beyond its input (block input, shortcut, the conv's input and
// output, each thread's float64 accumulator) and the floats it allocates
// for one image.
func refImage(n *network, threads int) (live, garbage int64) {
	// conv allocates the output of c on an h×h input while held is alive.
	conv := func(c *conv, h int, held int64) (int64, int) {
		oh := c.outSize(h)
		y := int64(c.cout * oh * oh)
		acc := 2 * int64(min(threads, c.cout)*oh*oh)
		garbage += y + acc
		live = max(live, held+y+acc)
		return y, oh
	}
	var x int64 // 0: the input, which is not the golden path's
	h := 1
	if n.vision {
		h = n.size
		x, h = conv(n.stem, h, 0)
		h = (h+2-3)/2 + 1
		pooled := int64(n.stem.cout * h * h)
		garbage += pooled
		live = max(live, x+pooled)
		x = pooled
		for _, b := range n.blocks {
			var short int64
			if b.down != nil {
				short, _ = conv(b.down, h, x)
			}
			y, hh := x, h
			for i, c := range b.convs {
				held := x + short
				if i > 0 {
					held += y
				}
				y, hh = conv(c, hh, held)
			}
			x, h = y, hh
		}
		x = int64(n.dense[0].cin) // the global average pool
		garbage += x
	}
	for _, d := range n.dense {
		x, _ = conv(d, 1, x)
	}
	return live, garbage
}

// replayActivations returns the floats the executor's buffer pool holds
// after running batch images in chunks of chunk: it replays the executor's
// get and put calls (forwardChunk, block, conv and the pools) on buffer
// sizes alone, forward after forward, until the pool reaches a fixed point.
func replayActivations(n *network, batch, chunk int) int64 {
	var pool bufferReplay
	for range 64 {
		before := pool.total
		state := append([]int(nil), pool.free...)
		for b0 := 0; b0 < batch; b0 += chunk {
			pool.chunk(n, min(chunk, batch-b0))
		}
		if pool.total == before && equalInts(state, pool.free) {
			break
		}
	}
	return pool.total
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// bufferReplay mirrors executor.get and executor.put on capacities.
type bufferReplay struct {
	free  []int // capacities of the recycled buffers, in executor order
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

func (r *bufferReplay) put(c int) { r.free = append(r.free, c) }

// chunk replays executor.forwardChunk for nb images.
func (r *bufferReplay) chunk(n *network, nb int) {
	if !n.vision {
		x := r.get(n.width * nb)
		for _, d := range n.dense {
			y := r.get(d.cout * nb)
			r.put(x)
			x = y
		}
		r.put(x)
		return
	}
	h := n.size
	x := r.get(n.inC * nb * h * h)
	h = n.stem.outSize(h)
	y := r.get(n.stem.cout * nb * h * h)
	r.put(x)
	h = (h+2-3)/2 + 1
	x = r.get(n.stem.cout * nb * h * h)
	r.put(y)
	for _, b := range n.blocks {
		short, hasShort := 0, false
		if b.down != nil {
			oh := b.down.outSize(h)
			short, hasShort = r.get(b.down.cout*nb*oh*oh), true
		}
		yy, hh := x, h
		for i, c := range b.convs {
			hh = c.outSize(hh)
			z := r.get(c.cout * nb * hh * hh)
			if i > 0 {
				r.put(yy)
			}
			yy = z
		}
		if hasShort {
			r.put(short)
		}
		r.put(x)
		x, h = yy, hh
	}
	last := n.blocks[len(n.blocks)-1].convs
	y = r.get(last[len(last)-1].cout * nb)
	r.put(x)
	x = y
	for _, d := range n.dense {
		y := r.get(d.cout * nb)
		r.put(x)
		x = y
	}
	r.put(x)
}
