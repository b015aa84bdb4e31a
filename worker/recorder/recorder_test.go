package recorder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// noDir fails the test if the recorder makes the job's directory.
func noDir(t *testing.T) func() (string, error) {
	return func() (string, error) {
		t.Error("the job's directory was made for a small log")
		return "", errors.New("no directory")
	}
}

// A small log stays in memory (no directory is made) and comes first
// among the artifacts; an artifact named twice is kept once, at its last
// path; phases are timed, told as they start, and their windows known.
func TestSmallLogPhasesAndArtifacts(t *testing.T) {
	t.Parallel()
	var told []string
	r := New(noDir(t), func(p string) { told = append(told, p) })
	r.Phase(device.PhaseCompile)
	r.Log("compiling")
	r.Phase(device.PhaseTiming)
	r.Log("timing")
	r.Artifact("perf.json", "/a/perf.json")
	r.Artifact("trace", "/a/trace")
	r.Artifact("perf.json", "/b/perf.json")
	phases, files := r.Finish()
	if strings.Join(told, ",") != "compile,timing" {
		t.Errorf("phases told %v, want compile, timing", told)
	}
	if phases.CompileS <= 0 || phases.TimingS <= 0 || phases.WarmupS != 0 {
		t.Errorf("phases %+v, want compile and timing timed, no warmup", phases)
	}
	if _, _, ok := r.Window(device.PhaseTiming); !ok {
		t.Error("no window for the timing phase")
	}
	if _, _, ok := r.Window(device.PhasePCC); ok {
		t.Error("a window for a phase that never ran")
	}
	if len(files) != 3 || files[0].Name != "worker.log" || files[0].Path != "" || files[1].Path != "/b/perf.json" || files[2].Name != "trace" {
		t.Fatalf("artifacts %+v, want worker.log in memory, perf.json at its last path, trace", files)
	}
	log := string(files[0].Data)
	if !strings.Contains(log, " phase compile\ncompiling\n") || !strings.HasSuffix(log, " phase timing\ntiming\n") {
		t.Errorf("worker.log:\n%s", log)
	}
}

// A log that outgrows memory goes whole, in order, to worker.log in the
// job's directory, made once; past maxLogLines lines it is cut short.
func TestLongLogSpillsToAFileAndIsCut(t *testing.T) {
	t.Parallel()
	dir, made := t.TempDir(), 0
	r := New(func() (string, error) { made++; return dir, nil }, nil)
	line := strings.Repeat("x", 99) // 100 bytes a line with its newline
	for range maxLogLines + 10 {
		r.Log(line)
	}
	_, files := r.Finish()
	if made != 1 || files[0].Data != nil || files[0].Path != filepath.Join(dir, "worker.log") {
		t.Fatalf("directory made %d times; worker.log %+v, want one file in the job's directory", made, files[0])
	}
	data, err := os.ReadFile(files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(line+"\n", maxLogLines) + "[log truncated]\n"
	if len(data) <= memLogBytes || string(data) != want {
		t.Errorf("worker.log holds %d bytes, want %d lines and the cut (%d bytes)", len(data), maxLogLines, len(want))
	}
}

// A job directory that cannot be made drops the rest of the log and says
// why in it.
func TestLogWithoutADirectory(t *testing.T) {
	t.Parallel()
	r := New(func() (string, error) { return "", errors.New("disk full") }, nil)
	for range memLogBytes/100 + 10 {
		r.Log(strings.Repeat("y", 99))
	}
	_, files := r.Finish()
	if log := string(files[0].Data); !strings.HasSuffix(log, "[log truncated: job log: disk full]\n") || len(log) > memLogBytes+100 {
		t.Errorf("worker.log of %d bytes ends %q", len(log), log[max(0, len(log)-60):])
	}
}

// What an attempt measured: the build its runner said it ran, else the
// host's for a job that names no wheels, else none.
func TestBuiltWith(t *testing.T) {
	t.Parallel()
	job := &protocol.Job{Source: protocol.Source{Commit: "abc"}}
	if b := New(nil, nil).BuiltWith(job); b == nil || b.Kind != protocol.BuildHost || b.Commit != "abc" {
		t.Errorf("no build said, no wheels: %+v, want the host's at abc", b)
	}
	wheels := &protocol.Job{Source: protocol.Source{Wheels: []protocol.Wheel{{URL: "wheels/a.whl"}}}}
	if b := New(nil, nil).BuiltWith(wheels); b != nil {
		t.Errorf("no build said for a job with wheels: %+v, want none", b)
	}
	r := New(nil, nil)
	r.Build(protocol.BuildInfo{Kind: protocol.BuildProvisioned, Cache: "hit"})
	if b := r.BuiltWith(wheels); b == nil || b.Cache != "hit" {
		t.Errorf("build said: %+v", b)
	}
}
