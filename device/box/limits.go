package box

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Defaults of Limits.
const (
	// DefaultPids bounds a job's tasks (processes and threads): a fork
	// bomb ends there, not at the host's limit. A harness (pytest,
	// PyTorch's and the runtime's thread pools) uses a few hundred.
	DefaultPids = 4096
	// DefaultMemoryPercent is the share of the host's memory one job may
	// use (memory.max), its room's and /tmp's contents included.
	DefaultMemoryPercent = 80
	// DefaultCPUWeight is a job's cgroup v2 cpu.weight (cgroup v1
	// cpu.shares weight×1024/100): the kernel's default, so jobs of two
	// slots share the CPU evenly.
	DefaultCPUWeight = 100
	// DefaultDisk bounds what a job can write: its room (work, tmp, out)
	// is a tmpfs of this size, as are its /tmp and /dev/shm, apart from
	// the build cache and the spool.
	DefaultDisk = 8 << 30
)

// Limits bound one job's resources. A zero field takes its default; -1
// turns a bound off (an operator's choice, shown as a wall that is down).
type Limits struct {
	// Pids is the job's pids.max. Default DefaultPids.
	Pids int64
	// Memory is the job's memory.max in bytes. Default DefaultMemoryPercent
	// of the host's memory.
	Memory int64
	// CPUWeight is the job's cpu.weight, 1 to 10000. Default
	// DefaultCPUWeight.
	CPUWeight int64
	// Disk is the size in bytes of the job's room, /tmp and /dev/shm
	// (tmpfs each). Default DefaultDisk.
	Disk int64
}

// withDefaults fills l's zero fields and checks the rest.
func (l Limits) withDefaults() (Limits, error) {
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.Memory == 0 {
		total, err := memTotal()
		if err != nil {
			return l, fmt.Errorf("box: limits.memory: no default: %w", err)
		}
		l.Memory = total / 100 * DefaultMemoryPercent
	}
	if l.CPUWeight == 0 {
		l.CPUWeight = DefaultCPUWeight
	}
	if l.Disk == 0 {
		l.Disk = DefaultDisk
	}
	for _, f := range []struct {
		name string
		v    int64
		min  int64
	}{{"pids", l.Pids, 16}, {"memory", l.Memory, 64 << 20}, {"cpu_weight", l.CPUWeight, 1}, {"disk", l.Disk, 1 << 20}} {
		if f.v != -1 && f.v < f.min {
			return l, fmt.Errorf("box: limits.%s %d is below %d (-1 turns the bound off)", f.name, f.v, f.min)
		}
	}
	if l.CPUWeight > 10000 {
		return l, fmt.Errorf("box: limits.cpu_weight %d is over 10000", l.CPUWeight)
	}
	return l, nil
}

// memTotal is the host's memory in bytes (MemTotal of /proc/meminfo).
func memTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}

// Hit names a limit a job ran into: "pids" (a fork failed at pids.max),
// "memory" (the kernel's OOM killer ended a process of the job at
// memory.max) or "disk" (its room was full).
type Hit string

// Hits of Room.Hits.
const (
	HitPids   Hit = "pids"
	HitMemory Hit = "memory"
	HitDisk   Hit = "disk"
)
