package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsFlusher returns the group flush of the file system holding root:
// syncfs(2), which writes back every dirty page and inode of that file
// system and commits its journal (and reports write-back errors since
// Linux 5.8).
func fsFlusher(root string) func() error {
	return func() error {
		d, err := os.Open(root)
		if err != nil {
			return err
		}
		defer d.Close()
		return unix.Syncfs(int(d.Fd()))
	}
}
