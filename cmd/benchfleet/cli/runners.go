package cli

import (
	"errors"

	_ "github.com/benchfleet/benchfleet/device/cpu"     // registers the cpu runner
	_ "github.com/benchfleet/benchfleet/device/harness" // registers forge, tt-xla
	_ "github.com/benchfleet/benchfleet/device/sim"     // registers the sim runner
	"github.com/benchfleet/benchfleet/worker/configfile"
	"github.com/benchfleet/benchfleet/worker/process"
)

// configUsage turns a bad worker config or slot spec (configfile.Error)
// or a worker process option that cannot be used (process.OptionError)
// into a usage error (exit 64); other errors pass through.
func configUsage(err error) error {
	var ce *configfile.Error
	if errors.As(err, &ce) {
		return usageErr("%s", ce.Msg)
	}
	var oe *process.OptionError
	if errors.As(err, &oe) {
		return usageErr("%v", oe)
	}
	return err
}
