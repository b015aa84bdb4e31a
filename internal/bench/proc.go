package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuReading is a process's CPU time so far, two ways.
type cpuReading struct {
	stat  time.Duration // utime + stime from /proc/<pid>/stat (10 ms ticks)
	sched time.Duration // sum of its threads' run time from schedstat (ns); -1 if unavailable
}

// procCPU reads the process's CPU time: user + system time from
// /proc/<pid>/stat (fields 14 and 15, in USER_HZ = 100 ticks a second on
// Linux), and the sum over its threads of /proc/<pid>/task/*/schedstat's
// first field (time on a CPU, in ns), which resolves a quiet process's
// few milliseconds.
func procCPU(pid int) (cpuReading, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuReading{}, err
	}
	st, err := parseProcStatCPU(string(b))
	if err != nil {
		return cpuReading{}, err
	}
	r := cpuReading{stat: st, sched: -1}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return r, nil
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return r, nil
		}
		sum += time.Duration(ns)
	}
	if len(tasks) > 0 {
		r.sched = sum
	}
	return r, nil
}

// sub is r - o, by schedstat where both have it, else by stat.
func (r cpuReading) sub(o cpuReading) (time.Duration, string) {
	if r.sched >= 0 && o.sched >= 0 && r.sched >= o.sched {
		return r.sched - o.sched, "schedstat"
	}
	return r.stat - o.stat, "stat"
}

// parseProcStatCPU is utime + stime of a /proc/<pid>/stat line.
func parseProcStatCPU(stat string) (time.Duration, error) {
	// The command (field 2) may hold spaces and parentheses: the fields
	// after it start past its last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command field")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// share is cpu as a percentage of one core over wall.
func share(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}

// cpuTimes is the machine's cpu line of /proc/stat (Linux): total ticks and
// steal ticks.
func cpuTimes() (total, steal uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i < 8 { // user nice system idle iowait irq softirq steal (guest is in user)
			total += n
		}
		if i == 7 {
			steal = n
		}
	}
	return total, steal, true
}
