package cpu

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

func procKB(field string) int64 {
	f, _ := os.Open("/proc/self/status")
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n * 1024
		}
	}
	return -1
}

func TestZZMeasure(t *testing.T) {
	if spec := os.Getenv("ZZ_SPEC"); spec != "" {
		var model, format string
		var batch, size, loop, warm int
		fmt.Sscanf(spec, "%s %s %d %d %d %d", &model, &format, &batch, &size, &loop, &warm)
		runtime.GC()
		debug.FreeOSMemory()
		before := procKB("VmRSS")
		hwm0 := procKB("VmHWM")
		job := testJob(model, format, batch, loop, warm, size)
		_, err := newRunner(t).Run(t.Context(), job, device.Device{}, &recorder{})
		if err != nil {
			t.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Printf("RESULT %d %d %d %d %d\n", before, hwm0, procKB("VmHWM"), ms.HeapSys, ms.NumGC)
		return
	}
	for _, spec := range []string{
		"resnet18 float32 1 32 2 1",
		"resnet18 bfloat16 8 64 2 1",
		"resnet50 float32 1 32 2 1",
		"resnet50 bfloat16 4 64 2 1",
		"resnet50 bfloat16 2 224 2 1",
		"resnet50 bfloat16 8 224 2 1",
		"resnet18 float32 16 224 2 1",
		"resnet18 float32 64 96 2 1",
		"mlp float32 1 0 2 1",
		"mlp float32 256 4096 2 1",
		"mlp float32 2048 16384 2 1",
		"resnet50 bfloat16 1 512 1 1",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestZZMeasure$")
		cmd.Env = append(os.Environ(), "ZZ_SPEC="+spec)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", spec, err, out)
		}
		var before, hwm0, hwm, heapSys, ngc int64
		i := strings.Index(string(out), "RESULT ")
		fmt.Sscanf(string(out[i:]), "RESULT %d %d %d %d %d", &before, &hwm0, &hwm, &heapSys, &ngc)
		var model, format string
		var batch, size, loop, warm int
		fmt.Sscanf(spec, "%s %s %d %d %d %d", &model, &format, &batch, &size, &loop, &warm)
		n, _ := buildShape(model, size)
		fp := estimate(n, batch, defaultThreads())
		est := fp.total()
		meas := hwm - before
		t.Logf("%-28s meas %7.1f MB (hwm0 %.1f base %.1f heapsys %.1f gc %d) est %7.1f MB ratio %.2f  %+v", spec, mb(meas), mb(hwm0), mb(before), mb(heapSys), ngc, mb(est), float64(est)/float64(meas), fpMB(fp))
		_ = protocol.FormatFloat32
	}
}

func mb(v int64) float64 { return float64(v) / (1 << 20) }
func fpMB(f footprint) string {
	return fmt.Sprintf("w %.0f p %.0f io %.0f act %.0f scr %.0f cg %.0f rl %.0f rg %.0f", mb(f.weights), mb(f.packed), mb(f.io), mb(f.activations), mb(f.scratch), mb(f.compileGarbage), mb(f.refLive), mb(f.refGarbage))
}
