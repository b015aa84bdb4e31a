package box

import (
	"fmt"
	"strings"
)

// Wall is one of the box's walls between a job and the rest of the host,
// as New found it on this host.
type Wall struct {
	// Name is the wall: "mount" (its own mount namespace: system
	// directories read-only, a private /tmp and /dev/shm, no other job's
	// room), "pid" (its own pid namespace), "network" (no network but its
	// own loopback), "devices" (only its slot's device nodes), "uid" (a
	// user of its own), "pids", "memory", "cpu" (its cgroup's bounds),
	// "disk" (its room a sized tmpfs).
	Name string `json:"name"`
	// Up is whether the wall stands.
	Up bool `json:"up"`
	// Chosen is set for a wall the operator took down on purpose
	// (isolation.network: host, a limit of -1, user: none): New neither
	// fails nor warns for it.
	Chosen bool `json:"chosen,omitempty"`
	// Detail says how it is built, or why it is down.
	Detail string `json:"detail"`
}

// Walls are the box's walls, in a fixed order.
func (b *Box) Walls() []Wall { return append([]Wall(nil), b.walls...) }

// WallsSummary is one line for logs and `benchfleet devices`: "mount pid
// network devices uid pids memory cpu disk up", or which are down.
func WallsSummary(walls []Wall) string {
	var up, down []string
	for _, w := range walls {
		if w.Up {
			up = append(up, w.Name)
		} else {
			down = append(down, w.Name)
		}
	}
	s := strings.Join(up, " ") + " up"
	if len(down) > 0 {
		s += "; down: " + strings.Join(down, " ")
	}
	return s
}

// checkWalls works out the walls from what New set up.
func (b *Box) checkWalls(sandbox string, sandboxErr error) []Wall {
	var walls []Wall
	sb := b.sandbox != ""
	why := "no sandbox (isolation.sandbox: none)"
	chosen := sandbox == SandboxNone
	if sandboxErr != nil {
		why, chosen = "no sandbox: "+sandboxErr.Error(), false
	}
	add := func(name string, up, ch bool, detail string) {
		walls = append(walls, Wall{Name: name, Up: up, Chosen: !up && ch, Detail: detail})
	}
	mount := "bubblewrap: system directories read-only, private /tmp and /dev/shm, only its room writable"
	if len(b.writable) > 0 {
		mount += fmt.Sprintf(", and %s, shared by every job", strings.Join(b.writable, ", "))
	}
	add("mount", sb, chosen, pick(sb, mount, why))
	add("pid", sb, chosen, pick(sb, "bubblewrap: a pid namespace of its own", why))
	switch {
	case !sb:
		add("network", false, chosen, why)
	case b.network == NetworkHost:
		add("network", false, true, "the host's network (isolation.network: host)")
	default:
		add("network", true, false, "bubblewrap: a network namespace with only its own loopback")
	}
	add("devices", sb, chosen, pick(sb, "only its slot's device nodes", why))
	switch {
	case b.uids != nil:
		add("uid", true, false, b.user.desc)
	case b.user.switched:
		add("uid", false, true, "every job runs as "+b.user.desc+": jobs that run at once share a user (leave isolation.user empty for a uid per job)")
	default:
		add("uid", false, b.user.desc == descNone && b.chosenNone, "jobs run as the worker's own user ("+b.user.desc+"): they can read what the worker can")
	}
	for _, c := range []struct {
		name string
		v    int64
		unit string
	}{{"pids", b.limits.Pids, "tasks"}, {"memory", b.limits.Memory, "bytes"}, {"cpu", b.limits.CPUWeight, "weight"}} {
		switch {
		case c.v == -1:
			add(c.name, false, true, "turned off (-1)")
		case b.ctl.v2[c.name]:
			add(c.name, true, false, fmt.Sprintf("cgroup v2, %d %s", c.v, c.unit))
		case b.ctl.v1[c.name] != "":
			add(c.name, true, false, fmt.Sprintf("cgroup v1, %d %s", c.v, c.unit))
		default:
			add(c.name, false, !b.ctl.allowed, b.ctl.why[c.name])
		}
	}
	switch {
	case b.limits.Disk == -1:
		add("disk", false, true, "turned off (-1)")
	case b.diskBound():
		add("disk", true, false, fmt.Sprintf("a tmpfs of %d bytes per room", b.limits.Disk))
	default:
		add("disk", false, false, "a worker that is not root cannot mount a room's tmpfs")
	}
	return walls
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// WallsLine is a box's walls on one line: those up, then those down with
// why ("by choice" for one the config took down), walls down for the same
// reason named together.
func WallsLine(walls []Wall) string {
	var up []string
	type reason struct {
		why   string
		names []string
	}
	var down []*reason
	byWhy := map[string]*reason{}
	for _, w := range walls {
		if w.Up {
			up = append(up, w.Name)
			continue
		}
		why := w.Detail
		if w.Chosen {
			why = "by choice: " + why
		}
		r := byWhy[why]
		if r == nil {
			r = &reason{why: why}
			byWhy[why] = r
			down = append(down, r)
		}
		r.names = append(r.names, w.Name)
	}
	s := "up: none"
	if len(up) > 0 {
		s = "up: " + strings.Join(up, " ")
	}
	for i, r := range down {
		sep := "; "
		if i == 0 {
			sep = "; down: "
		}
		s += sep + strings.Join(r.names, " ") + " (" + r.why + ")"
	}
	return s
}
