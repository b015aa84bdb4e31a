package box

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// systemDirs are bound read-only into every sandbox (or, where the host
// has a symlink, e.g. /bin -> usr/bin, the same symlink is made).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// setupSandbox finds bubblewrap and runs one empty job in it, as a job
// would run (its uid, limits, walls), to prove the host can build them.
func setupSandbox(bwrap string, b *Box) (string, error) {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return "", fmt.Errorf("bubblewrap not found (%w): install it (Debian: apt-get install bubblewrap)", err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", err
	}
	b.sandbox = path
	defer func() { b.sandbox = "" }()
	r, err := b.Open("sandbox-probe")
	if err != nil {
		return "", err
	}
	defer r.Remove()
	cmd := r.Cmd([]string{"/bin/true"}, []string{"PATH=/usr/bin:/bin"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := r.Start(cmd); err != nil {
		return "", err
	}
	if err := r.Wait(cmd); err != nil {
		return "", fmt.Errorf("%s cannot build the sandbox here (%v): %s", path, err, bytes.TrimSpace(out.Bytes()))
	}
	return path, nil
}

// bwrapArgs are bubblewrap's arguments for argv in the room. The fds of
// its info and block pipes are placeholders Start fills in.
func (r *Room) bwrapArgs(argv []string) []string {
	a := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
		"--info-fd", fdInfo, "--block-fd", fdBlock}
	if r.box.network == NetworkHost {
		a = append(a, "--share-net")
	}
	for _, d := range systemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case st.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	size := func() []string {
		if r.box.limits.Disk > 0 {
			return []string{"--size", strconv.FormatInt(r.box.limits.Disk, 10)}
		}
		return nil
	}
	a = append(a, size()...)
	a = append(a, "--tmpfs", "/tmp")
	a = append(a, size()...)
	a = append(a, "--tmpfs", "/dev/shm")
	if st, err := os.Stat("/sys"); err == nil && st.IsDir() {
		// The runtime reads its boards' PCI attributes there; the
		// host's cgroup tree is not the job's to list.
		a = append(a, "--ro-bind", "/sys", "/sys", "--tmpfs", "/sys/fs/cgroup")
	}
	ro := slices.Clone(r.box.readOnly)
	ro = append(ro, r.spec.ReadOnly...)
	ro = append(ro, filepath.Dir(argv[0]))
	seen := map[string]bool{}
	for _, p := range ro {
		p = filepath.Clean(p)
		if seen[p] || underSystem(p) {
			continue
		}
		seen[p] = true
		a = append(a, "--ro-bind-try", p, p)
	}
	for _, p := range r.box.writable {
		a = append(a, "--bind", p, p)
	}
	for _, d := range r.spec.Devices {
		a = append(a, "--dev-bind", d, d)
	}
	for _, d := range []string{r.Work, r.Tmp, r.Out} {
		a = append(a, "--bind", d, d)
	}
	names := make([]string, 0, len(r.spec.Files))
	for name := range r.spec.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a = append(a, "--ro-bind-try", r.spec.Files[name], filepath.Join(r.Work, filepath.Clean("/"+name)))
	}
	a = append(a, "--chdir", r.Work, "--")
	return append(a, argv...)
}

// underSystem reports whether p is a system directory or under one (bound
// already).
func underSystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || len(p) > len(d) && p[:len(d)] == d && p[len(d)] == '/' {
			return true
		}
	}
	return false
}

// Placeholders of bwrapArgs for the pipes' fds.
const (
	fdInfo  = "{info-fd}"
	fdBlock = "{block-fd}"
)

// handshake holds a sandboxed job before its first process: bubblewrap
// reports its sandbox's pid 1 on the info pipe, then waits for a byte on
// the block pipe before it starts the job; meanwhile both are put in the
// room's v1 cgroups, so that nothing of the job runs outside its limits.
type handshake struct {
	infoR, infoW, blockR, blockW *os.File
	// child is the sandbox's pid 1, as the host sees it.
	child int
}

// newHandshake makes the pipes and gives their ends to cmd.
func newHandshake(cmd *exec.Cmd) (*handshake, error) {
	h := &handshake{}
	var err error
	if h.infoR, h.infoW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if h.blockR, h.blockW, err = os.Pipe(); err != nil {
		h.close()
		return nil, err
	}
	base := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, h.infoW, h.blockR)
	for i, a := range cmd.Args {
		switch a {
		case fdInfo:
			cmd.Args[i] = strconv.Itoa(base)
		case fdBlock:
			cmd.Args[i] = strconv.Itoa(base + 1)
		}
	}
	return h, nil
}

// infoTimeout bounds the wait for bubblewrap's report.
const infoTimeout = 30 * time.Second

// release reads the sandbox's pid 1 from the info pipe, moves it into the
// room's v1 cgroups, then lets the job start.
func (h *handshake) release(pid int, cg jobCgroups) error {
	h.infoW.Close()
	h.blockR.Close()
	h.infoW, h.blockR = nil, nil
	_ = h.infoR.SetReadDeadline(time.Now().Add(infoTimeout))
	var buf []byte
	chunk := make([]byte, 512)
	for !bytes.Contains(buf, []byte("}")) && len(buf) < 8192 {
		n, err := h.infoR.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			return fmt.Errorf("bubblewrap reported no sandbox (%v)", err)
		}
	}
	var info struct {
		Child int `json:"child-pid"`
	}
	end := bytes.IndexByte(buf, '}')
	if err := json.Unmarshal(buf[:end+1], &info); err != nil || info.Child <= 0 {
		return fmt.Errorf("bubblewrap's report %q: %v", buf, err)
	}
	h.child = info.Child
	// The sandbox's pid 1 is the ancestor of every process of the job;
	// bubblewrap's own monitor (pid) runs nothing of it.
	if err := cg.join(info.Child); err != nil {
		return err
	}
	if _, err := h.blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("start the job: %w", err)
	}
	h.blockW.Close()
	h.blockW = nil
	return nil
}

// close closes what pipes are still open (a nil h is fine).
func (h *handshake) close() {
	if h == nil {
		return
	}
	for _, f := range []**os.File{&h.infoR, &h.infoW, &h.blockR, &h.blockW} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// diskBound reports whether rooms are a sized tmpfs: a root worker can
// mount one; Limits.Disk -1 turns it off.
func (b *Box) diskBound() bool { return b.worker.uid == 0 && b.limits.Disk > 0 }

// mountRoom mounts a tmpfs of size bytes at dir (mode 0711; no devices,
// no setuid programs).
func mountRoom(dir string, size int64) error {
	opts := fmt.Sprintf("size=%d,mode=0711", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, opts); err != nil {
		return fmt.Errorf("mount the room's tmpfs at %s: %w", dir, err)
	}
	// Unbindable: a sandbox that binds a directory above the rooms (an
	// environment beside them) gets the bare mount point, never another
	// job's room, and is not disturbed when that room is unmounted.
	if err := unix.Mount("", dir, "", unix.MS_UNBINDABLE, ""); err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return fmt.Errorf("make the room's tmpfs at %s unbindable: %w", dir, err)
	}
	return nil
}

// unmountRoom detaches the room's tmpfs at dir; one not mounted is fine.
func unmountRoom(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount the room's tmpfs at %s: %w", dir, err)
}

// roomFull reports whether the room's tmpfs at dir has no block left.
func roomFull(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Bavail == 0 || st.Bavail*uint64(st.Bsize) < 64<<10
}

// RemoveRoom deletes a room directory (a job-* directory of Root): its
// tmpfs, if mounted, is detached first. Callers pruning old rooms use it
// rather than os.RemoveAll.
func RemoveRoom(dir string) error {
	if err := unmountRoom(filepath.Join(dir, "j")); err != nil {
		return err
	}
	return removeTree(dir)
}

// signalUID sends sig to every process of uid but those in keep.
func signalUID(uid int, sig syscall.Signal, keep map[int]bool) {
	pids, _ := processesOf(uid)
	for _, pid := range pids {
		if keep[pid] {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if uidsOf(pid, uid) {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
}

func sleepBrief() { time.Sleep(2 * time.Millisecond) }
