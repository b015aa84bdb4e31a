package box

import (
	"fmt"
	"strings"
)

// Check validates c's values without building anything (New checks them
// again, and then the host): the walls, sandbox, network and cgroup modes,
// the limits and the uid range. A worker checks its config's isolation
// section with it at load, whatever slots it serves. Errors name the
// field as the worker config's isolation section spells it.
func (c Config) Check() error {
	for _, f := range []struct {
		key, v string
		ok     []string
	}{
		{"walls", c.Walls, []string{"", WallsRequire, WallsWarn}},
		{"sandbox", c.Sandbox, []string{"", SandboxBwrap, SandboxNone}},
		{"network", c.Network, []string{"", NetworkNone, NetworkHost}},
		{"cgroup", c.Cgroup, []string{"", CgroupAuto, CgroupOn, CgroupOff}},
		{"warm", c.Warm, []string{"", WarmOn, WarmOff}},
	} {
		found := false
		for _, v := range f.ok {
			found = found || f.v == v
		}
		if !found {
			return fmt.Errorf("%s %q is not one of %s", f.key, f.v, strings.Join(f.ok[1:], ", "))
		}
	}
	if _, err := c.Limits.withDefaults(); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "box: "))
	}
	if c.UIDs != "" {
		if _, _, err := parseUIDRange(c.UIDs); err != nil {
			return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "box: "))
		}
	}
	return nil
}

// parseUIDRange parses Config.UIDs ("FIRST-LAST", FIRST at least 1000).
func parseUIDRange(spec string) (first, last int, err error) {
	a, b, ok := strings.Cut(spec, "-")
	first, err1 := parseID(strings.TrimSpace(a))
	last, err2 := parseID(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first > last {
		return 0, 0, fmt.Errorf("box: uids %q: want FIRST-LAST, a range of uids", spec)
	}
	if first < 1000 {
		return 0, 0, fmt.Errorf("box: uids %q: starts below 1000, among the system's users", spec)
	}
	return first, last, nil
}
