// Package recorder is what one attempt of a job records while it runs
// (device.Recorder, device.BuildRecorder): the phases with their timings,
// the job's log (worker.log: in memory while small, then in a file of the
// job's directory), its artifacts and the build its runner said it ran.
package recorder

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// Recorder implements device.Recorder for one attempt: it times phases,
// keeps log lines for worker.log (in memory up to memLogBytes, then in a
// file of the job's directory, created only then), collects artifacts and
// tells each phase's start (for its event).
type Recorder struct {
	mu        sync.Mutex
	phase     string
	phaseAt   time.Time
	durations map[string]time.Duration
	windows   map[string][2]time.Time // first start and last end of each phase
	dir       func() (string, error)  // the job's directory, created on first use
	mem       bytes.Buffer            // the log while it is small
	logFile   *os.File                // the log once it outgrew mem
	logBuf    *bufio.Writer
	logPath   string
	logErr    error // the spill failed: the rest of the log is dropped
	lines     int
	files     []storage.ArtifactFile
	onPhase   func(name string)
	build     *protocol.BuildInfo // what the runner said it ran (device.BuildRecorder)
}

// maxLogLines bounds worker.log; a runner that floods is cut short.
const maxLogLines = 100_000

// memLogBytes is how much of worker.log stays in memory; a longer log goes
// to a file. Most jobs log a few lines: no file is created, written, read
// back and removed for them.
const memLogBytes = 256 << 10

// New returns the recorder of an attempt: dir makes the job's directory
// (called once the log outgrows memory), onPhase (nil: none) is told each
// phase as it starts.
func New(dir func() (string, error), onPhase func(string)) *Recorder {
	return &Recorder{durations: map[string]time.Duration{}, windows: map[string][2]time.Time{}, dir: dir, onPhase: onPhase}
}

// out is where the next log bytes go: memory while small, then the file.
// r.mu is held.
func (r *Recorder) out(n int) io.Writer {
	if r.logBuf != nil {
		return r.logBuf
	}
	if r.logErr != nil {
		return io.Discard
	}
	if r.mem.Len()+n <= memLogBytes {
		return &r.mem
	}
	dir, err := r.dir()
	if err == nil {
		p := filepath.Join(dir, "worker.log")
		var f *os.File
		if f, err = os.Create(p); err == nil {
			r.logFile, r.logBuf, r.logPath = f, bufio.NewWriter(f), p
			r.logBuf.Write(r.mem.Bytes())
			r.mem = bytes.Buffer{}
			return r.logBuf
		}
	}
	r.logErr = fmt.Errorf("job log: %w", err)
	r.mem.WriteString("[log truncated: " + r.logErr.Error() + "]\n")
	return io.Discard
}

// Build implements device.BuildRecorder.
func (r *Recorder) Build(b protocol.BuildInfo) {
	r.mu.Lock()
	r.build = &b
	r.mu.Unlock()
}

// BuiltWith is what the attempt measured (Result.Build): the build its
// runner said it ran or, from a runner that does not say (cpu, sim), the
// host's; nil for a job that names wheels and got no build (it failed
// before one was made).
func (r *Recorder) BuiltWith(job *protocol.Job) *protocol.BuildInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.build != nil {
		b := *r.build
		return &b
	}
	if len(job.Source.Wheels) > 0 {
		return nil
	}
	return &protocol.BuildInfo{Kind: protocol.BuildHost, Commit: job.Source.Commit}
}

// Phase implements device.Recorder.
func (r *Recorder) Phase(name string) {
	r.mu.Lock()
	now := time.Now()
	r.endPhase(now)
	r.phase, r.phaseAt = name, now
	line := now.UTC().Format(time.RFC3339Nano) + " phase " + name + "\n"
	io.WriteString(r.out(len(line)), line)
	r.mu.Unlock()
	if r.onPhase != nil {
		r.onPhase(name)
	}
}

// endPhase closes the current phase at now. r.mu is held.
func (r *Recorder) endPhase(now time.Time) {
	if r.phase == "" {
		return
	}
	r.durations[r.phase] += now.Sub(r.phaseAt)
	w, ok := r.windows[r.phase]
	if !ok {
		w[0] = r.phaseAt
	}
	w[1] = now
	r.windows[r.phase] = w
}

// Window returns when phase first started and last ended (ok: it ran).
func (r *Recorder) Window(phase string) (from, to time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.windows[phase]
	return w[0], w[1], ok
}

// Log implements device.Recorder.
func (r *Recorder) Log(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines++
	if r.lines > maxLogLines {
		if r.lines == maxLogLines+1 {
			io.WriteString(r.out(16), "[log truncated]\n")
		}
		return
	}
	w := r.out(len(line) + 1)
	io.WriteString(w, line)
	io.WriteString(w, "\n")
}

// Artifact implements device.Recorder.
func (r *Recorder) Artifact(name, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, f := range r.files {
		if f.Name == name {
			r.files[i].Path = path
			return
		}
	}
	r.files = append(r.files, storage.ArtifactFile{Name: name, Path: path})
}

// Finish ends the current phase, closes the log, and returns the phase
// timings and the artifacts (worker.log first).
func (r *Recorder) Finish() (protocol.Phases, []storage.ArtifactFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endPhase(time.Now())
	r.phase = ""
	if r.logFile != nil {
		r.logBuf.Flush()
		r.logFile.Close()
		r.logFile = nil
	}
	ph := protocol.Phases{
		SetupS:   r.durations[device.PhaseSetup].Seconds(),
		CompileS: r.durations[device.PhaseCompile].Seconds(),
		WarmupS:  r.durations[device.PhaseWarmup].Seconds(),
		TimingS:  r.durations[device.PhaseTiming].Seconds(),
		PCCS:     r.durations[device.PhasePCC].Seconds(),
	}
	log := storage.ArtifactFile{Name: "worker.log", Path: r.logPath}
	if r.logPath == "" {
		log.Data = append([]byte{}, r.mem.Bytes()...)
	}
	files := append([]storage.ArtifactFile{log}, r.files...)
	return ph, files
}
