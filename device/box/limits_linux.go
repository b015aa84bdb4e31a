package box

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// workerLeaf is the cgroup v2 leaf a worker moves itself to so that its
// cgroup may enable controllers for its jobs' cgroups.
const workerLeaf = "benchfleet-worker"

// limitControllers are the cgroup controllers the limits need.
var limitControllers = []string{"pids", "memory", "cpu"}

// controllers is where each limit controller can be used for job cgroups:
// in the cgroup v2 job cgroups themselves (v2), or, on a hybrid host
// whose controllers are still bound to cgroup v1 hierarchies, in a job
// cgroup of the worker's cgroup of that hierarchy (v1: controller ->
// directory of the worker's cgroup there).
type controllers struct {
	v2 map[string]bool
	v1 map[string]string
	// why says, for a controller in neither, what was missing.
	why map[string]string
	// allowed is false in the cgroup "off" mode, an operator's choice.
	allowed bool
}

// has reports whether ctl can bound jobs.
func (c controllers) has(ctl string) bool { return c.v2[ctl] || c.v1[ctl] != "" }

// findControllers finds the limit controllers: in the v2 directory v2dir
// (the parent of job cgroups; "" without one) when they are enabled for
// its children or can be, else in the v1 hierarchies. allowed false (the
// cgroup "off" mode) finds none.
func findControllers(v2dir string, allowed bool) controllers {
	c := controllers{v2: map[string]bool{}, v1: map[string]string{}, why: map[string]string{}, allowed: allowed}
	if !allowed {
		for _, ctl := range limitControllers {
			c.why[ctl] = "cgroups are off (isolation.cgroup: off)"
		}
		return c
	}
	if v2dir != "" {
		for _, ctl := range limitControllers {
			if enableV2(v2dir, ctl) == nil {
				c.v2[ctl] = true
			}
		}
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, ctl := range limitControllers {
		if c.v2[ctl] {
			continue
		}
		dir, err := v1Dir(string(mountinfo), string(self), ctl)
		if err == nil {
			err = probeV1(dir)
		}
		if err != nil {
			c.why[ctl] = err.Error()
			continue
		}
		c.v1[ctl] = dir
	}
	return c
}

// enableV2 makes controller ctl available to the children of dir: it is
// in dir's cgroup.subtree_control already, or is written there. A cgroup
// with processes of its own cannot enable controllers for its children
// (the no-internal-process rule), so when the worker is in dir, it first
// moves itself to a leaf, dir/benchfleet-worker (the layout systemd's
// Delegate=yes expects).
func enableV2(dir, ctl string) error {
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if hasWord(sub, ctl) {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !hasWord(avail, ctl) {
		return fmt.Errorf("controller %s not in %s/cgroup.controllers", ctl, dir)
	}
	err = writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctl)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(dir, workerLeaf)
		if err := unix.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return err
		}
		err = writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctl)
	}
	return err
}

// v1Dir is the directory of the worker's cgroup in the v1 hierarchy of
// controller ctl.
func v1Dir(mountinfo, self, ctl string) (string, error) {
	path := ""
	for line := range strings.Lines(self) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(f) == 3 && f[0] != "0" && hasWord([]byte(strings.ReplaceAll(f[1], ",", " ")), ctl) {
			path = f[2]
		}
	}
	if path == "" {
		return "", fmt.Errorf("no cgroup v2 or v1 hierarchy with the %s controller", ctl)
	}
	has := func(fstype, opts string) bool {
		return fstype == "cgroup" && hasWord([]byte(strings.ReplaceAll(opts, ",", " ")), ctl)
	}
	if dir, ok := mountOf(mountinfo, path, has); ok {
		return dir, nil
	}
	return "", fmt.Errorf("the %s controller's cgroup v1 hierarchy is not mounted", ctl)
}

// probeV1 checks that job cgroups can be made under dir.
func probeV1(dir string) error {
	p := filepath.Join(dir, "benchfleet-probe-"+randomToken())
	if err := unix.Mkdir(p, 0o755); err != nil {
		return fmt.Errorf("cannot make a cgroup under %s: %w", dir, err)
	}
	return unix.Rmdir(p)
}

// hasWord reports whether the space-separated list holds w.
func hasWord(list []byte, w string) bool {
	for f := range bytes.FieldsSeq(list) {
		if string(f) == w {
			return true
		}
	}
	return false
}

// writeFile writes s to an existing (cgroup) file.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// jobCgroups are one room's cgroups beyond the v2 one that kills: the v1
// directories that bound it on a hybrid host.
type jobCgroups struct {
	v1 map[string]string // controller -> the room's directory
}

// setLimits writes the room's limits into its v2 cgroup (dir; "" without
// one) and makes and writes its v1 cgroups, named name.
func (b *Box) setLimits(dir, name string) (jobCgroups, error) {
	j := jobCgroups{v1: map[string]string{}}
	l := b.limits
	files := map[string][2]string{
		"pids":   {"pids.max", strconv.FormatInt(l.Pids, 10)},
		"memory": {"memory.max", strconv.FormatInt(l.Memory, 10)},
		"cpu":    {"cpu.weight", strconv.FormatInt(l.CPUWeight, 10)},
	}
	v1files := map[string][2]string{
		"pids":   {"pids.max", strconv.FormatInt(l.Pids, 10)},
		"memory": {"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)},
		"cpu":    {"cpu.shares", strconv.FormatInt(max(2, l.CPUWeight*1024/100), 10)},
	}
	for _, ctl := range limitControllers {
		off := map[string]int64{"pids": l.Pids, "memory": l.Memory, "cpu": l.CPUWeight}[ctl] == -1
		switch {
		case off:
		case b.ctl.v2[ctl] && dir != "":
			f := files[ctl]
			if err := writeFile(filepath.Join(dir, f[0]), f[1]); err != nil {
				j.remove(time.Now())
				return j, fmt.Errorf("cgroup %s: %w", f[0], err)
			}
		case b.ctl.v1[ctl] != "":
			d := filepath.Join(b.ctl.v1[ctl], name)
			if err := unix.Mkdir(d, 0o755); err != nil {
				j.remove(time.Now())
				return j, fmt.Errorf("cgroup v1 %s: %w", ctl, &os.PathError{Op: "mkdir", Path: d, Err: err})
			}
			j.v1[ctl] = d
			f := v1files[ctl]
			if err := writeFile(filepath.Join(d, f[0]), f[1]); err != nil {
				j.remove(time.Now())
				return j, fmt.Errorf("cgroup v1 %s: %w", f[0], err)
			}
		}
	}
	return j, nil
}

// setCPU writes the room's CPU weight (1 to 10000; cpu.shares on v1),
// where the box bounds it: a warm room waits at the least, its job gets
// the box's.
func (b *Box) setCPU(dir string, j jobCgroups, weight int64) error {
	if b.limits.CPUWeight == -1 {
		return nil
	}
	if b.ctl.v2["cpu"] && dir != "" {
		return writeFile(filepath.Join(dir, "cpu.weight"), strconv.FormatInt(weight, 10))
	}
	if d := j.v1["cpu"]; d != "" {
		return writeFile(filepath.Join(d, "cpu.shares"), strconv.FormatInt(max(2, weight*1024/100), 10))
	}
	return nil
}

// join moves process pid into the room's v1 cgroups. Each move takes the
// kernel's cgroup migration lock, whose writer waits out an RCU grace
// period; moves made at once share one, so they run in parallel.
func (j jobCgroups) join(pid int) error {
	errs := make(chan error, len(j.v1))
	for ctl, d := range j.v1 {
		go func() {
			if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				errs <- fmt.Errorf("join cgroup v1 %s: %w", ctl, err)
				return
			}
			errs <- nil
		}()
	}
	var all []error
	for range j.v1 {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// hits reads which limits the room's processes ran into, from its v2
// cgroup dir and its v1 cgroups; call it before they are removed.
func (j jobCgroups) hits(dir string) []Hit {
	var hits []Hit
	count := func(path, key string) int64 {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == key {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
		return 0
	}
	pids, mem := int64(0), int64(0)
	if dir != "" {
		pids += count(filepath.Join(dir, "pids.events"), "max")
		mem += count(filepath.Join(dir, "memory.events"), "oom_kill")
	}
	if d := j.v1["pids"]; d != "" {
		pids += count(filepath.Join(d, "pids.events"), "max")
	}
	if d := j.v1["memory"]; d != "" {
		mem += count(filepath.Join(d, "memory.oom_control"), "oom_kill")
	}
	if pids > 0 {
		hits = append(hits, HitPids)
	}
	if mem > 0 {
		hits = append(hits, HitMemory)
	}
	return hits
}

// remove removes the room's v1 cgroups, once empty (until deadline).
func (j jobCgroups) remove(deadline time.Time) error {
	var errs []error
	for ctl, d := range j.v1 {
		delay := time.Millisecond
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("cgroup v1 %s: %w", ctl, &os.PathError{Op: "rmdir", Path: d, Err: err}))
				break
			}
			time.Sleep(delay)
			delay = min(2*delay, 20*time.Millisecond)
		}
		delete(j.v1, ctl)
	}
	return errors.Join(errs...)
}
