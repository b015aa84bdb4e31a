package box

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// ident is a user jobs run as (or the worker's own).
type ident struct {
	// switched is whether jobs run as uid:gid rather than the worker's
	// own user.
	switched bool
	uid, gid int
	// name is the user's name when it has a passwd entry ("" otherwise).
	name string
	// groups are its supplementary groups (Config.Groups).
	groups []uint32
	// desc is what Box.User returns.
	desc string
}

// descNone describes jobs run as the worker's own user.
const descNone = UserNone + " (the worker's own user)"

// resolveUser resolves Config.User for a worker running as euid:egid.
func resolveUser(spec string, euid, egid int) (ident, error) {
	own := ident{uid: euid, gid: egid, desc: descNone}
	switch spec {
	case UserNone:
		return own, nil
	case "":
		if euid != 0 {
			return own, nil
		}
		spec = DefaultUser
	}
	name, uid, gid, err := lookupUser(spec)
	if err != nil {
		return ident{}, fmt.Errorf("box: user %q: %w", spec, err)
	}
	if uid == 0 {
		return ident{}, fmt.Errorf("box: user %q is root: jobs would run with every privilege (%q runs them as the worker's own user deliberately)", spec, UserNone)
	}
	desc := fmt.Sprintf("%d:%d", uid, gid)
	if name != "" {
		desc = fmt.Sprintf("%s (%s)", name, desc)
	}
	if euid != 0 {
		if uid == euid && gid == egid {
			return own, nil
		}
		return ident{}, fmt.Errorf("box: user %q (%d:%d): the worker runs as %d:%d, not root, so it cannot run jobs as another user (leave user empty or %q to run them as the worker's own)", spec, uid, gid, euid, egid, UserNone)
	}
	return ident{switched: true, uid: uid, gid: gid, desc: desc, name: name}, nil
}

// JobUser describes the user a Box with Config.User spec would run jobs
// as, for this process ("nobody (65534:65534)", "none (the worker's own
// user)"), without making a Box; the error is New's for that spec.
func JobUser(spec string) (string, error) {
	u, err := resolveUser(spec, os.Geteuid(), os.Getegid())
	if err != nil {
		return "", err
	}
	return u.desc, nil
}

// lookupUser resolves "NAME", "UID" (which needs a passwd entry for its
// gid) or "UID:GID" (which needs none; name is then the entry's if any).
func lookupUser(spec string) (name string, uid, gid int, err error) {
	if u, g, ok := strings.Cut(spec, ":"); ok {
		if uid, err = parseID(u); err != nil {
			return "", 0, 0, err
		}
		if gid, err = parseID(g); err != nil {
			return "", 0, 0, err
		}
		if e, err := user.LookupId(u); err == nil {
			name = e.Username
		}
		return name, uid, gid, nil
	}
	var e *user.User
	if _, perr := parseID(spec); perr == nil {
		e, err = user.LookupId(spec)
		var unknown user.UnknownUserIdError
		if errors.As(err, &unknown) {
			return "", 0, 0, fmt.Errorf("no passwd entry for uid %s to take the gid from: give UID:GID", spec)
		}
	} else {
		e, err = user.Lookup(spec)
	}
	if err != nil {
		return "", 0, 0, err
	}
	if uid, err = parseID(e.Uid); err != nil {
		return "", 0, 0, fmt.Errorf("passwd entry's uid: %w", err)
	}
	if gid, err = parseID(e.Gid); err != nil {
		return "", 0, 0, fmt.Errorf("passwd entry's gid: %w", err)
	}
	return e.Username, uid, gid, nil
}

// parseID parses a uid or gid (a decimal uint32 that is not -1).
func parseID(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("%q is not a uid or gid", s)
	}
	return int(n), nil
}

// lookupGroup resolves a group name or gid.
func lookupGroup(spec string) (int, error) {
	if gid, err := parseID(spec); err == nil {
		return gid, nil
	}
	g, err := user.LookupGroup(spec)
	if err != nil {
		return 0, fmt.Errorf("box: group %q: %w", spec, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("box: group %q has gid %q", spec, g.Gid)
	}
	return gid, nil
}
