package forge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// The test binary doubles as a stand-in for `python -m pytest` running the
// upstream harness: TestMain hands over to fakePytest when the variable
// below names a behaviour. It follows the upstream CLI contract (DESIGN §1):
// positive integer options or a usage error (exit 4), the upstream log
// lines, TT_VISIBLE_DEVICES required, the output file only when passing.
const fakeEnv = "BENCHFLEET_FAKE_PYTEST"

// Behaviours of the fake harness.
const (
	fakePass        = "pass"        // passes and writes the report
	fakePassWarmIts = "pass-warm"   // also prints warmup iterations as "Iteration i took"
	fakePCC         = "pcc"         // PCC assertion fails: exit 1, no report
	fakeHang        = "hang"        // hangs after compile with a child; both ignore SIGTERM
	fakeHangPolite  = "hang-polite" // hangs but exits on SIGTERM
	fakeChild       = "child"       // the hanging child
	fakeInterrupted = "interrupted" // exit 2
	fakeCrash       = "crash"       // killed by SIGKILL (like the OOM killer)
	fakeSkip        = "skip"        // exit 0 without a report
	fakeSpam        = "spam"        // very long and very many lines, then passes
	fakeBadReport   = "bad-report"  // exit 0 with garbage in the report
)

func fakePytest(mode string, args []string) int {
	if mode == fakeChild {
		signal.Ignore(syscall.SIGTERM)
		for {
			time.Sleep(time.Hour)
		}
	}
	if len(args) < 2 || args[0] != "-m" || args[1] != "pytest" {
		fmt.Fprintln(os.Stderr, "fake python: only `-m pytest` is supported")
		return 2
	}
	opts := map[string]string{}
	var positional []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-svv":
		case "-m":
			i++
		case "--batch-size", "--loop-count", "--warmup-count", "--data-format", "--output-file":
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "ERROR: usage: pytest [options] [file_or_dir]\npytest: error: argument %s: expected one argument\n", a)
				return 4
			}
			opts[a] = args[i+1]
			i++
		default:
			if len(a) > 0 && a[0] == '-' {
				fmt.Fprintf(os.Stderr, "ERROR: usage: pytest [options] [file_or_dir]\npytest: error: unrecognized arguments: %s\n", a)
				return 4
			}
			positional = append(positional, a)
		}
	}
	ints := map[string]int{}
	for _, name := range []string{"--batch-size", "--loop-count", "--warmup-count"} {
		n, err := strconv.Atoi(opts[name])
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "ERROR: usage: pytest [options] [file_or_dir]\npytest: error: argument %s: invalid positive int value: %q\n", name, opts[name])
			return 4
		}
		ints[name] = n
	}
	if f := opts["--data-format"]; f != "float32" && f != "bfloat16" {
		fmt.Fprintf(os.Stderr, "pytest: error: argument --data-format: invalid choice: %q\n", f)
		return 4
	}
	if len(positional) != 1 {
		fmt.Fprintln(os.Stderr, "fake pytest: want exactly one test node id")
		return 4
	}
	visible, ok := os.LookupEnv("TT_VISIBLE_DEVICES")
	if !ok || visible == "" {
		fmt.Println("RuntimeError: TT_VISIBLE_DEVICES is not set")
		return 1
	}
	batch, loop, warm := ints["--batch-size"], ints["--loop-count"], ints["--warmup-count"]
	fmt.Printf("============================= test session starts ==============================\n")
	fmt.Printf("collected 1 item\n\n%s \n", positional[0])
	fmt.Printf("TT_VISIBLE_DEVICES=%s cwd=%s\n", visible, mustGetwd())
	fmt.Println("Compiling model for the device...")
	time.Sleep(30 * time.Millisecond)

	switch mode {
	case fakeHang, fakeHangPolite:
		if mode == fakeHang {
			signal.Ignore(syscall.SIGTERM)
		}
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), fakeEnv+"="+fakeChild)
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Println("fake: start child:", err)
			return 3
		}
		if err := os.WriteFile(os.Getenv("FAKE_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
			fmt.Println("fake: pid file:", err)
			return 3
		}
		fmt.Println("Compilation done; running warmup... (hanging)")
		for {
			time.Sleep(time.Hour)
		}
	case fakeInterrupted:
		fmt.Println("!!!!!!!!!!!!!!!!!!! KeyboardInterrupt !!!!!!!!!!!!!!!!!!!")
		return 2
	case fakeCrash:
		fmt.Println("Killed (out of memory)")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	case fakeSpam:
		long := make([]byte, 100_000)
		for i := range long {
			long[i] = 'x'
		}
		fmt.Printf("%s\n", long)
		for i := range 3000 {
			fmt.Printf("spam line %d\n", i)
		}
	}

	fmt.Printf("Running %d warmup iterations\n", warm)
	if mode == fakePassWarmIts {
		for i := range warm {
			fmt.Printf("Iteration %d took 999.0 ms\n", i)
		}
	}
	time.Sleep(20 * time.Millisecond)
	var totalMS float64
	for i := range loop {
		ms := 10 + float64(i%4) // 10, 11, 12, 13 ms
		totalMS += ms
		fmt.Printf("Iteration %d took %.3f ms\n", i, ms)
	}
	totalS := totalMS / 1000
	fmt.Printf("Total time: %.4fs for %d iterations\n", totalS, loop)

	switch mode {
	case fakePCC:
		fmt.Println("E       AssertionError: PCC is 0.4213 which is less than the required 0.99")
		fmt.Println("FAILED " + positional[0] + " - AssertionError: PCC is 0.4213")
		return 1
	case fakeSkip:
		fmt.Println("SKIPPED [1] Training is not supported")
		return 0
	case fakeBadReport:
		_ = os.WriteFile(opts["--output-file"], []byte(`{"measurements": "nope"}`), 0o644)
		return 0
	}
	report := map[string]any{
		"model":           "resnet50",
		"model_type":      "Vision",
		"run_type":        fmt.Sprintf("resnet50_%d_%d", batch, loop),
		"config":          map[string]any{"training": false, "warmup_iterations": warm, "program_cache_enabled": true},
		"num_layers":      50,
		"batch_size":      batch,
		"precision":       opts["--data-format"],
		"dataset_name":    "Random Data",
		"image_dimension": "3x224x224",
		"perf_analysis":   false,
		"measurements": []map[string]any{
			{"iteration": 1, "step_name": "resnet50", "step_warm_up_num_iterations": warm, "measurement_name": "total_samples", "value": batch * loop, "target": -1, "device_power": -1.0, "device_temperature": -1.0},
			{"iteration": 1, "step_name": "resnet50", "step_warm_up_num_iterations": warm, "measurement_name": "total_time", "value": totalS, "target": -1, "device_power": -1.0, "device_temperature": -1.0},
		},
		"device_info":   map[string]any{"device_name": "n150", "arch": "wormhole", "device_count": 1, "device_type": "n150"},
		"pcc":           0.99712,
		"project":       "tt-forge/tt-forge-onnx",
		"model_rawname": "resnet50",
	}
	data, _ := json.Marshal(report)
	if err := os.WriteFile(opts["--output-file"], data, 0o644); err != nil {
		fmt.Println("OSError:", err)
		return 1
	}
	fmt.Println("PASSED")
	return 0
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}
