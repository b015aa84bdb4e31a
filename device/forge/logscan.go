package forge

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/device"
)

// Limits of what the runner forwards from the harness's output. The log
// file artifact keeps everything up to maxLogFileBytes; these only bound the
// live stream of log lines and the failure reason.
const (
	maxLineBytes    = 2048     // a longer line is truncated before rec.Log
	linesPerSecond  = 200      // rec.Log rate, beyond it lines are counted and dropped
	lineBurst       = 400      // lines allowed in one second before limiting
	tailLines       = 20       // lines kept for a failure reason
	tailBytes       = 4096     // bytes kept for a failure reason
	maxLogFileBytes = 64 << 20 // log.txt stops growing here
	maxIterations   = 1 << 20  // iteration times kept for statistics
)

var (
	// Iteration 3 took 12.5 ms
	iterRE = regexp.MustCompile(`Iteration\s+(\d+)\s+took\s+([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*ms`)
	// Total time: 1.234s for 128 iterations
	totalRE = regexp.MustCompile(`Total time:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*s\s+for\s+(\d+)\s+iterations`)
	// Warmup / warm-up / warming up
	warmupRE = regexp.MustCompile(`(?i)\bwarm(?:ing)?[ -]?up\b`)
)

// scanner reads the harness's combined stdout and stderr line by line:
// it forwards lines to the recorder (truncated and rate limited), maps
// them to phases, and keeps what the runner needs afterwards.
type scanner struct {
	rec   device.Recorder
	now   func() time.Time
	start time.Time

	mu         sync.Mutex
	compileEnd time.Time // first warmup or iteration line
	warmupAt   time.Time // first warmup line
	timingAt   time.Time // first iteration line
	pccAt      time.Time // the "Total time" line
	iters      []time.Duration
	totalLine  bool
	tail       []string
	tailSize   int
	// rate limiting of rec.Log
	window     time.Time
	inWindow   int
	suppressed int
}

func newScanner(rec device.Recorder, start time.Time, now func() time.Time) *scanner {
	return &scanner{rec: rec, now: now, start: start}
}

// run reads r until EOF or a read error.
func (s *scanner) run(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long strings.Builder // the start of an over-long line
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if long.Len() < maxLineBytes {
				long.Write(chunk[:min(len(chunk), maxLineBytes-long.Len())])
			}
			continue
		case len(chunk) > 0 || long.Len() > 0:
			line := string(chunk)
			if long.Len() > 0 {
				line = long.String() + line
				long.Reset()
			}
			s.line(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			s.flushSuppressed()
			return
		}
	}
}

func (s *scanner) line(line string) {
	// Progress bars redraw with \r; the last state is the line.
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	if len(line) > maxLineBytes {
		line = line[:maxLineBytes] + fmt.Sprintf(" ... [%d bytes truncated]", len(line)-maxLineBytes)
	}
	now := s.now()
	var phase string
	s.mu.Lock()
	s.addTail(line)
	if m := iterRE.FindStringSubmatch(line); m != nil {
		if ms, err := strconv.ParseFloat(m[2], 64); err == nil && ms >= 0 && len(s.iters) < maxIterations {
			s.iters = append(s.iters, time.Duration(ms*float64(time.Millisecond)))
		}
		if s.compileEnd.IsZero() {
			s.compileEnd = now
		}
		if s.timingAt.IsZero() && !s.totalLine {
			s.timingAt = now
			phase = device.PhaseTiming
		}
	} else if totalRE.MatchString(line) {
		s.totalLine = true
		if s.pccAt.IsZero() {
			s.pccAt = now
			phase = device.PhasePCC
		}
	} else if warmupRE.MatchString(line) && s.warmupAt.IsZero() && s.timingAt.IsZero() {
		s.warmupAt = now
		if s.compileEnd.IsZero() {
			s.compileEnd = now
		}
		phase = device.PhaseWarmup
	}
	forward, note := s.allow(now)
	s.mu.Unlock()
	if note != "" {
		s.rec.Log(note)
	}
	if phase != "" {
		s.rec.Phase(phase)
	}
	if forward {
		s.rec.Log(line)
	}
}

// allow applies the rec.Log rate limit: whether to forward the line, and a
// note about lines dropped before it, if any. s.mu is held.
func (s *scanner) allow(now time.Time) (forward bool, note string) {
	if now.Sub(s.window) >= time.Second {
		if s.suppressed > 0 {
			note = fmt.Sprintf("[benchfleet: %d log lines not streamed (rate limit); see log.txt]", s.suppressed)
			s.suppressed = 0
		}
		s.window, s.inWindow = now, 0
	}
	limit := linesPerSecond
	if s.window.Sub(s.start) < time.Second {
		limit = lineBurst
	}
	if s.inWindow >= limit {
		s.suppressed++
		return false, note
	}
	s.inWindow++
	return true, note
}

func (s *scanner) flushSuppressed() {
	s.mu.Lock()
	n := s.suppressed
	s.suppressed = 0
	s.mu.Unlock()
	if n > 0 {
		s.rec.Log(fmt.Sprintf("[benchfleet: %d log lines not streamed (rate limit); see log.txt]", n))
	}
}

func (s *scanner) addTail(line string) {
	s.tail = append(s.tail, line)
	s.tailSize += len(line) + 1
	for len(s.tail) > tailLines || (s.tailSize > tailBytes && len(s.tail) > 1) {
		s.tailSize -= len(s.tail[0]) + 1
		s.tail = s.tail[1:]
	}
}

// Tail returns the last lines of output (at most tailLines lines and about
// tailBytes bytes), joined by newlines.
func (s *scanner) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := strings.Join(s.tail, "\n")
	if len(t) > tailBytes {
		t = "..." + t[len(t)-tailBytes:]
	}
	return t
}

// Iterations returns the timed iterations seen in the log. When the log
// holds more "Iteration i took" lines than the timed loop has (a harness
// that prints warmup iterations the same way), the last loop ones are kept.
func (s *scanner) Iterations(loop int) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.iters
	if loop > 0 && len(it) > loop {
		it = it[len(it)-loop:]
	}
	return append([]time.Duration(nil), it...)
}

// phases derives the phase durations from the runner's own clock: compile
// from process start to the first warmup or iteration line, warmup until
// the first iteration line, timing from the harness's total_time, pcc from
// the "Total time" line until the process ended. ok is false when the log
// never left the compile phase.
func (s *scanner) phases(end time.Time, timingS float64) (p phasesOut, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compileEnd.IsZero() {
		return p, false
	}
	p.compile = s.compileEnd.Sub(s.start).Seconds()
	if !s.warmupAt.IsZero() && !s.timingAt.IsZero() {
		p.warmup = s.timingAt.Sub(s.warmupAt).Seconds()
	}
	p.timing = timingS
	if !s.pccAt.IsZero() {
		p.pcc = end.Sub(s.pccAt).Seconds()
	}
	return p, true
}

type phasesOut struct{ compile, warmup, timing, pcc float64 }
