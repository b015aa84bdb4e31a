package harness_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/harness"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

// hostileModule is a perf test module written into a real checkout: the
// hostile code runs under the checkout's real pytest and conftests.
const hostileModule = `import os, socket, time
import pytest


@pytest.mark.perf
def test_bomb():
    end = time.time() + 4
    while time.time() < end:
        try:
            if os.fork() == 0:
                while time.time() < end:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.01)
                os._exit(0)
        except OSError:
            time.sleep(0.01)
    assert False, "bombed"


@pytest.mark.perf
def test_dial():
    port = int(os.environ["BENCH_TEST_PORT"])
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
    except OSError as e:
        print("DIAL REFUSED:", e, flush=True)
        return
    raise AssertionError("CONNECTED to the host's loopback")


@pytest.mark.perf
def test_poison():
    cache = os.environ["HF_HOME"]
    print("CACHE READ:", open(os.path.join(cache, "model.bin")).read(), flush=True)
    try:
        with open(os.path.join(cache, "model.bin"), "w") as f:
            f.write("poisoned")
        print("POISONED the shared cache", flush=True)
    except OSError as e:
        print("CACHE READ-ONLY:", e, flush=True)
`

// Under real pytest, a fork bomb on one board ends at its job's task
// limit and fails that job as its own doing, while a job on the board
// beside it passes; a job cannot connect to a server on the host's
// loopback (the farm's NATS, the store); and a shared model cache
// (HF_HOME, even one its files let anyone write) is read-only to a job.
func TestWallsUnderPytest(t *testing.T) {
	requireRoot(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := harnesstest.NewCheckout(t, "forge", "", false)
	mod := filepath.Join(c.Workdir, "forge", "test", "benchmark", "test_hostile.py")
	if err := os.WriteFile(mod, []byte(hostileModule), 0o644); err != nil {
		t.Fatal(err)
	}
	// A model cache the config names (HF_HOME), as operators share one.
	cache := filepath.Join(t.TempDir(), "hf")
	harnesstest.Traversable(t, filepath.Dir(cache))
	if err := os.Mkdir(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "model.bin"), []byte("weights"), 0o666); err != nil {
		t.Fatal(err)
	}
	st := device.Settings{Workdir: c.Workdir, Python: c.Python, TempDir: filepath.Join(t.TempDir(), "rooms"),
		Env: map[string]string{"BENCH_TEST_PORT": strconv.Itoa(l.Addr().(*net.TCPAddr).Port), "HF_HOME": cache}}
	st.Box.Limits.Pids = 128
	k, _ := device.Lookup("forge")
	dr, err := k.New(st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	r := dr.(*harness.Runner)
	for _, w := range r.Walls() {
		if !w.Up {
			t.Fatalf("wall %s down: %s", w.Name, w.Detail)
		}
	}
	beside := n150
	beside.ID, beside.Visible = "tt3", "0000:04:00.0"

	var wg sync.WaitGroup
	var bombErr, otherErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		bomb := job("forge/test/benchmark/test_hostile.py::test_bomb", 1, 2, 1)
		bomb.ID = "bomb"
		_, bombErr = r.Run(t.Context(), bomb, n150, &recorder{})
	}()
	go func() {
		defer wg.Done()
		other := job(harnesstest.ForgeResNet50, 1, 8, 1)
		other.ID = "beside"
		_, otherErr = r.Run(t.Context(), other, beside, &recorder{})
	}()
	wg.Wait()
	if otherErr != nil {
		t.Fatalf("the job beside the fork bomb: %v", otherErr)
	}
	var je *device.JobError
	if !errors.As(bombErr, &je) || je.Limit != device.LimitPids || !strings.Contains(je.Reason, "task limit") {
		t.Fatalf("the fork bomb: %v, want the job's own fault naming its task limit", bombErr)
	}

	rec := &recorder{}
	dial := job("forge/test/benchmark/test_hostile.py::test_dial", 1, 2, 1)
	_, err = r.Run(t.Context(), dial, n150, rec)
	logText, _ := os.ReadFile(rec.artifacts[harness.ArtifactLog])
	if strings.Contains(string(logText), "CONNECTED") || !strings.Contains(string(logText), "DIAL REFUSED") {
		t.Fatalf("dialing the host's loopback from the box (%v):\n%s", err, logText)
	}

	rec = &recorder{}
	_, err = r.Run(t.Context(), job("forge/test/benchmark/test_hostile.py::test_poison", 1, 2, 1), n150, rec)
	logText, _ = os.ReadFile(rec.artifacts[harness.ArtifactLog])
	if !strings.Contains(string(logText), "CACHE READ: weights") || !strings.Contains(string(logText), "CACHE READ-ONLY") {
		t.Fatalf("the shared cache from the box (%v):\n%s", err, logText)
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "model.bin")); string(b) != "weights" {
		t.Fatalf("the shared cache was poisoned: %q", b)
	}
}
