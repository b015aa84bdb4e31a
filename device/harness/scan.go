package harness

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
	"github.com/benchfleet/benchfleet/protocol"
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
	maxIterationMS  = 1e9      // a longer printed iteration (11.6 days) is no number
)

var (
	// Iteration 3 took 12.5000 ms (tt-forge-onnx, "%.04f"); tt-xla prints
	// "%.04" (general format), which can be "1.234e+03 ms".
	iterRE = regexp.MustCompile(`^Iteration\s+(\d+)\s+took\s+([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*ms\s*$`)
	// Total time: 1.2340s for 128 iterations (both harnesses, same for the
	// warmup and the timed loop).
	totalRE = regexp.MustCompile(`^Total time:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*s\s+for\s+(\d+)\s+iterations\s*$`)
	// PCC verification passed with PCC=0.998765 (tt-forge-onnx).
	pccRE = regexp.MustCompile(`^PCC verification passed with PCC=(` + num + `)\s*$`)
	// PCC check: Calculated PCC=0.950000, Required PCC=0.90 (tt-xla, after
	// its own check passed), or for a multi-output model
	// PCC check: Overall PCC=0.99, Min scale PCC=0.98, Required PCC=0.97.
	xlaPCCRE = regexp.MustCompile(`^PCC check: (?:Calculated|Overall) PCC=(` + num + `)(?:, Min scale PCC=` + num + `)?, Required PCC=(` + num + `)\s*$`)
	// The failed checks' texts, inside an AssertionError anywhere on the
	// line: tt-forge-onnx's "Golden comparison failed (compare_with_golden).
	// PCC=0.41, required=0.99"; tt-xla's "PCC comparison failed.
	// Calculated: pcc=0.5. Required: pcc=0.9" (utils.py), "PCC comparison
	// failed. Overall PCC=0.5, Min scale PCC=0.4. Required: pcc=0.97"
	// (multi-output) or "PCC comparison failed. PCC=0.5, Required=0.9"
	// (accuracy.py).
	pccFailRE = regexp.MustCompile(`(?:Golden comparison failed \(compare_with_golden\)|PCC comparison failed)\. ` +
		`(?:PCC=|Calculated: pcc=|Overall PCC=)(` + num + `)(?:, Min scale PCC=` + num + `)?[.,] [Rr]equired(?:=|: pcc=)(` + num + `)`)
)

// num is a decimal number as Python prints a float.
const num = `-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?`

// Lines pytest prints that classify an exit (pytest's
// config/__init__.py and main.py). They are matched at the start of a line:
// the harness echoes job input (the node id) only after "ERROR: not found: ",
// and node ids cannot hold newlines, so a job cannot forge one.
var (
	conftestErrPrefixes = []string{"ImportError while loading conftest '"}
	moduleErrPrefixes   = []string{"ImportError while importing test module '"}
	notFoundPrefixes    = []string{"ERROR: not found: ", "ERROR: file or directory not found: ", "ERROR: found no collectors for "}
)

// loop is one run of "Iteration i took X ms" lines closed by a "Total
// time" line: the warmup or the timed loop.
type loop struct {
	start time.Time       // first line of the loop
	last  time.Time       // its last "Iteration" line
	end   time.Time       // its "Total time" line
	iters []time.Duration // per-iteration times printed (at most maxIterations over all loops)
	// lines counts the loop's Iteration lines whose time was a number;
	// sum adds up those times, rest all but the first line's (what the
	// lines claim passed between the first and the last), uncapped.
	lines     int
	sum, rest time.Duration
	total     float64 // seconds printed on the Total line
	n         int     // iterations the Total line names
	closed    bool
}

// Scan reads the harness's combined stdout and stderr line by line:
// it forwards lines to the recorder (truncated and rate limited), maps
// them to phases, and keeps what the runner needs afterwards (the loops,
// the PCC line, the lines that classify an exit, the tail).
type Scan struct {
	rec      device.Recorder
	now      func() time.Time
	start    time.Time
	loopWant int // the timed loop's length, if known (0 = the last loop)

	mu         sync.Mutex
	loops      []*loop
	pcc        *float64 // the passed check's PCC
	required   *float64 // the PCC the harness required, if it said
	failedPCC  *[2]float64
	conftest   string // first conftest import error line
	moduleErr  string // first test module import error line
	notFound   string // first "not found" line
	end        time.Time
	tail       []string
	tailSize   int
	iterations int
	// rate limiting of rec.Log
	window     time.Time
	inWindow   int
	suppressed int
}

func newScanner(rec device.Recorder, start time.Time, now func() time.Time, loopWant int) *Scan {
	return &Scan{rec: rec, now: now, start: start, loopWant: loopWant}
}

// run reads r until EOF or a read error.
func (s *Scan) run(r io.Reader) {
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

func hasPrefix(line string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func (s *Scan) line(line string) {
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
	switch {
	case iterRE.MatchString(line):
		m := iterRE.FindStringSubmatch(line)
		cur := s.open()
		if cur == nil {
			cur = &loop{start: now}
			s.loops = append(s.loops, cur)
			phase = s.loopPhase(len(s.loops) - 1)
		}
		cur.last = now
		if ms, err := strconv.ParseFloat(m[2], 64); err == nil && ms >= 0 && ms < maxIterationMS {
			d := time.Duration(ms * float64(time.Millisecond))
			if cur.lines > 0 {
				cur.rest += d
			}
			cur.lines++
			cur.sum += d
			if s.iterations < maxIterations {
				cur.iters = append(cur.iters, d)
				s.iterations++
			}
		}
	case totalRE.MatchString(line):
		m := totalRE.FindStringSubmatch(line)
		cur := s.open()
		if cur == nil { // a loop of zero printed iterations
			cur = &loop{start: now}
			s.loops = append(s.loops, cur)
		}
		cur.closed, cur.end = true, now
		cur.total, _ = strconv.ParseFloat(m[1], 64)
		cur.n, _ = strconv.Atoi(m[2])
		if s.isTimed(len(s.loops) - 1) {
			phase = device.PhasePCC
		}
	case pccRE.MatchString(line):
		if v, err := strconv.ParseFloat(pccRE.FindStringSubmatch(line)[1], 64); err == nil && s.pcc == nil {
			s.pcc = &v
		}
	case xlaPCCRE.MatchString(line):
		m := xlaPCCRE.FindStringSubmatch(line)
		v, verr := strconv.ParseFloat(m[1], 64)
		req, rerr := strconv.ParseFloat(m[2], 64)
		// A model may check several outputs: the result is the worst.
		if verr == nil && rerr == nil && (s.pcc == nil || v < *s.pcc) {
			s.pcc, s.required = &v, &req
		}
	case s.failedPCC == nil && strings.Contains(line, "comparison failed") && pccFailRE.MatchString(line):
		m := pccFailRE.FindStringSubmatch(line)
		v, verr := strconv.ParseFloat(m[1], 64)
		req, rerr := strconv.ParseFloat(m[2], 64)
		if verr == nil && rerr == nil {
			s.failedPCC = &[2]float64{v, req}
		}
	case s.conftest == "" && hasPrefix(line, conftestErrPrefixes):
		s.conftest = line
	case s.moduleErr == "" && hasPrefix(line, moduleErrPrefixes):
		s.moduleErr = line
	case s.notFound == "" && hasPrefix(line, notFoundPrefixes):
		s.notFound = line
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

// open returns the loop still collecting iterations, if any. s.mu is held.
func (s *Scan) open() *loop {
	if n := len(s.loops); n > 0 && !s.loops[n-1].closed {
		return s.loops[n-1]
	}
	return nil
}

// loopPhase is the phase a newly opened loop starts: the first is the
// warmup, the next the timed loop. s.mu is held.
func (s *Scan) loopPhase(i int) string {
	switch i {
	case 0:
		return device.PhaseWarmup
	case 1:
		return device.PhaseTiming
	}
	return ""
}

// isTimed reports whether the closed loop i is the timed one while the run
// goes on: the second loop, or the first when its length is the timed
// loop's and no warmup is expected. s.mu is held.
func (s *Scan) isTimed(i int) bool { return i == 1 }

// finish records when the process ended.
func (s *Scan) finish(end time.Time) {
	s.mu.Lock()
	s.end = end
	s.mu.Unlock()
}

// loopsLocked returns the warmup and timed loops of a finished run: the
// timed loop is the last closed loop (of loopWant iterations when that is
// known and one matches), the warmup the closed loop before it. Either may
// be nil. s.mu is held.
func (s *Scan) loopsLocked() (warmup, timed *loop) {
	idx := -1
	for i := len(s.loops) - 1; i >= 0; i-- {
		l := s.loops[i]
		if !l.closed {
			continue
		}
		if idx < 0 {
			idx = i
		}
		if s.loopWant > 0 && l.n == s.loopWant {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, nil
	}
	timed = s.loops[idx]
	for i := idx - 1; i >= 0; i-- {
		if s.loops[i].closed {
			warmup = s.loops[i]
			break
		}
	}
	return warmup, timed
}

// Timed returns the iteration times of the timed loop only.
func (s *Scan) Timed() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, timed := s.loopsLocked()
	if timed == nil {
		return nil
	}
	return append([]time.Duration(nil), timed.iters...)
}

// TimedTotal returns the timed loop's printed total time in seconds and
// its iteration count.
func (s *Scan) TimedTotal() (seconds float64, n int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, timed := s.loopsLocked()
	if timed == nil {
		return 0, 0, false
	}
	return timed.total, timed.n, true
}

// TimedClaims is what the timed loop's Iteration lines claim: how many
// were printed with a time, the sum of their times, and the sum of all
// but the first line's (how long passed between the first line and the
// last, by their own account). ok is false without a timed loop.
func (s *Scan) TimedClaims() (lines int, sum, afterFirst time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, timed := s.loopsLocked()
	if timed == nil {
		return 0, 0, 0, false
	}
	return timed.lines, timed.sum, timed.rest, true
}

// WarmupIterations returns how many warmup iterations the harness ran (the
// warmup loop's Total line), 0 when it printed none.
func (s *Scan) WarmupIterations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, _ := s.loopsLocked()
	if w == nil {
		return 0
	}
	return w.n
}

// TimedWindow is what the worker's own clock saw of the timed loop, from
// the arrival of the harness's lines: about least, the span from the
// arrival of its first to its last "Iteration" line, and at most most, the
// span from the process's start to the arrival of the timed loop's "Total
// time" line (a line cannot arrive before it was printed). ok is false
// without a timed loop.
func (s *Scan) TimedWindow() (least, most time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, timed := s.loopsLocked()
	if timed == nil {
		return 0, 0, false
	}
	if !timed.last.IsZero() {
		least = timed.last.Sub(timed.start)
	}
	return least, timed.end.Sub(s.start), true
}

// PCC returns the passed accuracy check's PCC and the PCC the harness
// required (0 when it did not print it), if a passed check was printed:
// forge's "PCC verification passed" line or tt-xla's "PCC check" line (the
// lowest, when it checked several outputs).
func (s *Scan) PCC() (value, required float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pcc == nil {
		return 0, 0, false
	}
	if s.required != nil {
		required = *s.required
	}
	return *s.pcc, required, true
}

// FailedPCC returns the figures of a failed accuracy check's message, if
// the harness printed one.
func (s *Scan) FailedPCC() (value, required float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failedPCC == nil {
		return 0, 0, false
	}
	return s.failedPCC[0], s.failedPCC[1], true
}

// Phases derives the phase durations. warmup_s and timing_s are the
// harness's own clock: the totals it printed for the warmup and the timed
// loop (timingS, the report's total_time, when the timed loop printed
// none); compile_s runs from process start to the first loop line (the
// harness builds inputs and the golden output before compiling, which this
// counts as compile); pcc_s from the timed loop's Total line to process
// exit. ok is false when the log never left the compile phase.
func (s *Scan) Phases(timingS float64) (p protocol.Phases, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	warmup, timed := s.loopsLocked()
	if timed == nil {
		return p, false
	}
	first := timed
	if warmup != nil {
		first = warmup
		p.WarmupS = warmup.total
	}
	p.CompileS = first.start.Sub(s.start).Seconds()
	p.TimingS = timed.total
	if p.TimingS <= 0 {
		p.TimingS = timingS
	}
	if !s.end.IsZero() {
		p.PCCS = s.end.Sub(timed.end).Seconds()
	}
	return p, true
}

// allow applies the rec.Log rate limit: whether to forward the line, and a
// note about lines dropped before it, if any. s.mu is held.
func (s *Scan) allow(now time.Time) (forward bool, note string) {
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

func (s *Scan) flushSuppressed() {
	s.mu.Lock()
	n := s.suppressed
	s.suppressed = 0
	s.mu.Unlock()
	if n > 0 {
		s.rec.Log(fmt.Sprintf("[benchfleet: %d log lines not streamed (rate limit); see log.txt]", n))
	}
}

func (s *Scan) addTail(line string) {
	s.tail = append(s.tail, line)
	s.tailSize += len(line) + 1
	for len(s.tail) > tailLines || (s.tailSize > tailBytes && len(s.tail) > 1) {
		s.tailSize -= len(s.tail[0]) + 1
		s.tail = s.tail[1:]
	}
}

// Tail returns the last lines of output (at most tailLines lines and about
// tailBytes bytes), joined by newlines.
func (s *Scan) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := strings.Join(s.tail, "\n")
	if len(t) > tailBytes {
		t = "..." + t[len(t)-tailBytes:]
	}
	return t
}
