package box

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Reachable reports whether the job user of Config.User spec could read
// path, judged from the mode bits of path and of every directory above
// it (owner, group, other; no ACLs). It is false, nil when jobs would run
// as the worker's own user: then everything the worker reads is theirs
// too, which New already warns about. A path that does not exist is not
// reachable.
func Reachable(spec, path string) (bool, error) {
	u, err := resolveUser(spec, os.Geteuid(), os.Getegid())
	if err != nil || !u.switched {
		return false, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(abs)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !allows(st, u, 4) {
		return false, nil
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		dst, err := os.Stat(d)
		if err != nil {
			return false, fmt.Errorf("box: %s: %w", d, err)
		}
		if !allows(dst, u, 1) {
			return false, nil
		}
		if d == filepath.Dir(d) {
			return true, nil
		}
	}
}

// allows reports whether st's mode grants u the permission bit perm (4
// read, 1 search) as owner, group (its own or a supplementary one) or
// other.
func allows(st os.FileInfo, u ident, perm os.FileMode) bool {
	mode := st.Mode().Perm()
	uid, gid := owner(st)
	switch {
	case uid == u.uid:
		return mode&(perm<<6) != 0
	case gid == u.gid || slices.Contains(u.groups, uint32(gid)):
		return mode&(perm<<3) != 0
	}
	return mode&perm != 0
}
