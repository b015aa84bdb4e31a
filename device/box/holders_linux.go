package box

import (
	"bytes"
	"os"
	"strconv"
)

// Holder is a process that holds a file open.
type Holder struct {
	PID  int
	Comm string
	// Path is the file it holds, one of those asked about.
	Path string
}

// Holders lists the processes, other than this one, that hold one of
// paths open (a device node: a board in use), by a scan of every
// process's open files in /proc. A process whose files this one may not
// read (another user's, to a worker that is not root) is not seen.
func Holders(paths []string) ([]Holder, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	pids, err := allPids()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Holder
	buf := make([]byte, 512)
	for _, pid := range pids {
		if pid == self {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		d, err := os.Open(dir)
		if err != nil {
			continue // gone, or not ours to read
		}
		fds, _ := d.Readdirnames(-1)
		d.Close()
		for _, fd := range fds {
			link, err := os.Readlink(dir + "/" + fd)
			if err != nil || !want[link] {
				continue
			}
			comm := string(bytes.TrimSpace(readProc(buf, "/proc/"+strconv.Itoa(pid)+"/comm")))
			out = append(out, Holder{PID: pid, Comm: comm, Path: link})
			break
		}
	}
	return out, nil
}
