package cpu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// MaxJobBytes is the most memory a cpu job may need (by EstimateBytes)
// anywhere: submit refuses a job over it, and so does every worker.
//
// 8 GiB is half of a 16 GiB machine, the smallest host a cpu pool is
// expected to run on, so a job that passes submit leaves the worker process
// and its other slots room on any of them. The demo's jobs need a
// thirtieth of it (resnet50 at 224, batch 1: about 0.25 GiB; batch 8: 0.4
// GiB); it admits resnet50 at 224 at every batch (4096: about 2.8 GiB) and
// at 512 up to batch 2554. What grows past it is the input tensor (batch ×
// 3 × size² float32s: 48 GiB at batch 4096, size 1024).
const MaxJobBytes int64 = 8 << 30

// HostMemoryFraction is the share of the host's memory (MemTotal) one job
// may need on a worker, which further lowers MaxJobBytes on a host with
// less than twice as much.
const HostMemoryFraction = 0.5

// hostMemory is the host's MemTotal in bytes from /proc/meminfo, read
// once; 0 where it cannot be read (not Linux).
var hostMemory = sync.OnceValue(func() int64 { return memTotal("/proc/meminfo") })

// memTotal returns the MemTotal line of a meminfo file in bytes, or 0.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// budget is the memory limit one job is checked against.
type budget struct {
	bytes  int64
	reason string // where the limit comes from, for the error
}

// submitBudget is the limit without a host: MaxJobBytes.
var submitBudget = budget{bytes: MaxJobBytes, reason: "cpu.MaxJobBytes"}

// hostBudget is the limit on a host with mem bytes of memory (0: unknown):
// the smaller of MaxJobBytes and HostMemoryFraction of mem.
func hostBudget(mem int64) budget {
	if share := int64(float64(mem) * HostMemoryFraction); mem > 0 && share < MaxJobBytes {
		return budget{bytes: share, reason: fmt.Sprintf("%.0f%% of this host's %s", HostMemoryFraction*100, formatBytes(mem))}
	}
	return submitBudget
}

// checkBudget returns an *InvalidError when a run of b with threads
// goroutines needs more than lim, naming the estimate, the limit and what
// to lower. b must have passed the runner's other checks.
func checkBudget(b protocol.Benchmark, threads int, lim budget) error {
	fp, err := estimateBenchmark(b, threads)
	if err != nil {
		return device.Invalid("cpu: %v", err)
	}
	return overBudget(b, fp, threads, lim)
}

// overBudget is checkBudget's verdict on fp, b's estimate.
func overBudget(b protocol.Benchmark, fp footprint, threads int, lim budget) error {
	need := fp.total()
	if need <= lim.bytes {
		return nil
	}
	n, _ := buildShape(b.Model, b.InputSize)
	what := "input_size"
	if !n.vision {
		what = "input_size (the mlp width)"
	}
	fits := func(batch int) bool {
		return estimate(n, batch, b.LoopCount, threads).total() <= lim.bytes
	}
	hint := fmt.Sprintf("lower %s: batch_size 1 does not fit at input_size %d", what, sizeOfNet(n))
	if fits(1) {
		lo, hi := 1, b.BatchSize // fits(lo), !fits(hi)
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		hint = fmt.Sprintf("lower batch_size (at most %d fits at input_size %d) or %s", lo, sizeOfNet(n), what)
	}
	return device.Invalid("cpu: %s at batch_size %d, input_size %d needs an estimated %s of memory, over the limit of %s (%s); %s",
		b.Model, b.BatchSize, sizeOfNet(n), formatBytes(need), formatBytes(lim.bytes), lim.reason, hint)
}

// sizeOfNet is the input size a network was built at (the job's, or the
// model's default).
func sizeOfNet(n *network) int {
	if n.vision {
		return n.size
	}
	return n.width
}

// formatBytes prints n bytes in GiB (MiB below 1 GiB), one decimal.
func formatBytes(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
