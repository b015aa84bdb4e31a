package worker

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// recorder implements device.Recorder for one attempt: it times phases,
// writes log lines to worker.log in the job's directory, collects artifacts
// and publishes phase events.
type recorder struct {
	mu        sync.Mutex
	phase     string
	phaseAt   time.Time
	durations map[string]time.Duration
	windows   map[string][2]time.Time // first start and last end of each phase
	logFile   *os.File
	logBuf    *bufio.Writer
	logPath   string
	lines     int
	files     []storage.ArtifactFile
	onPhase   func(name string)
}

// maxLogLines bounds worker.log; a runner that floods is cut short.
const maxLogLines = 100_000

func newRecorder(dir string, onPhase func(string)) (*recorder, error) {
	p := filepath.Join(dir, "worker.log")
	f, err := os.Create(p)
	if err != nil {
		return nil, fmt.Errorf("job log: %w", err)
	}
	return &recorder{durations: map[string]time.Duration{}, windows: map[string][2]time.Time{}, logFile: f, logBuf: bufio.NewWriter(f), logPath: p, onPhase: onPhase}, nil
}

// Phase implements device.Recorder.
func (r *recorder) Phase(name string) {
	r.mu.Lock()
	now := time.Now()
	r.endPhase(now)
	r.phase, r.phaseAt = name, now
	fmt.Fprintf(r.logBuf, "%s phase %s\n", now.UTC().Format(time.RFC3339Nano), name)
	r.mu.Unlock()
	if r.onPhase != nil {
		r.onPhase(name)
	}
}

// endPhase closes the current phase at now. r.mu is held.
func (r *recorder) endPhase(now time.Time) {
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

// window returns when phase first started and last ended.
func (r *recorder) window(phase string) (from, to time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.windows[phase]
	return w[0], w[1], ok
}

// Log implements device.Recorder.
func (r *recorder) Log(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines++
	if r.lines > maxLogLines {
		if r.lines == maxLogLines+1 {
			r.logBuf.WriteString("[log truncated]\n")
		}
		return
	}
	r.logBuf.WriteString(line)
	r.logBuf.WriteByte('\n')
}

// Artifact implements device.Recorder.
func (r *recorder) Artifact(name, path string) {
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

// finish ends the current phase, closes the log, and returns the phase
// timings and the artifacts (worker.log first).
func (r *recorder) finish() (protocol.Phases, []storage.ArtifactFile) {
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
		CompileS: r.durations[device.PhaseCompile].Seconds(),
		WarmupS:  r.durations[device.PhaseWarmup].Seconds(),
		TimingS:  r.durations[device.PhaseTiming].Seconds(),
		PCCS:     r.durations[device.PhasePCC].Seconds(),
	}
	files := append([]storage.ArtifactFile{{Name: "worker.log", Path: r.logPath}}, r.files...)
	return ph, files
}
