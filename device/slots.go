package device

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/benchfleet/benchfleet/protocol"
)

// MaxBuiltinSlots bounds the count of one pool in a slot spec.
const MaxBuiltinSlots = 256

// BuiltinSlots parses a built-in slot spec, "pool=count[,pool=count...]"
// such as "cpu=2,sim=8", into devices cpu-0, cpu-1, sim-0, ... in the
// order given, each with Runner = Pool, Chips 1 and Healthy true. Only the
// built-in pools cpu and sim are allowed, each at most once, with a count
// from 1 to MaxBuiltinSlots; errors name the offending part. An empty spec
// means no built-in slots.
func BuiltinSlots(spec string) ([]Device, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var devs []Device
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		pool, count, ok := strings.Cut(part, "=")
		pool, count = strings.TrimSpace(pool), strings.TrimSpace(count)
		if !ok || pool == "" || count == "" {
			return nil, fmt.Errorf("slots %q: %q is not pool=count", spec, part)
		}
		if pool != protocol.RunnerCPU && pool != protocol.RunnerSim {
			return nil, fmt.Errorf("slots %q: pool %q is not a built-in pool (cpu or sim); Tenstorrent slots come from discovery or the config file", spec, pool)
		}
		if seen[pool] {
			return nil, fmt.Errorf("slots %q: pool %q appears twice", spec, pool)
		}
		seen[pool] = true
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > MaxBuiltinSlots {
			return nil, fmt.Errorf("slots %q: %s count %q must be an integer from 1 to %d", spec, pool, count, MaxBuiltinSlots)
		}
		for i := range n {
			devs = append(devs, Device{ID: pool + "-" + strconv.Itoa(i), Pool: pool, Runner: pool, Chips: 1, Healthy: true})
		}
	}
	return devs, nil
}
