package spool

import "golang.org/x/sys/unix"

// freeBytes is the room an unprivileged writer has on the file system
// holding dir (statfs(2) f_bavail); ok is false when it cannot be read.
func freeBytes(dir string) (free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
