package process

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchfleet/benchfleet/worker/configfile"
)

// UseFile makes f the worker's config file: o.File, and each of the id,
// the store, the spool, the metrics address, the notify URL and the
// timeouts that o leaves empty is taken from f (options given beside the
// file win). A bad timeout is a *configfile.Error.
func (o *Options) UseFile(f *configfile.File) error {
	o.File = f
	o.Worker.ID, o.StoreURL, o.Spool = cmp.Or(o.Worker.ID, f.ID), cmp.Or(o.StoreURL, f.Store), cmp.Or(o.Spool, f.Spool)
	o.MetricsListen, o.NotifyURL = cmp.Or(o.MetricsListen, f.MetricsListen), cmp.Or(o.NotifyURL, f.Notify.URL)
	job, drain, err := f.Timeouts.Durations()
	if err != nil {
		return err
	}
	o.Worker.JobTimeout, o.Worker.DrainTimeout = cmp.Or(o.Worker.JobTimeout, job), cmp.Or(o.Worker.DrainTimeout, drain)
	max, err := f.Timeouts.MaxJob()
	if err != nil {
		return err
	}
	o.Worker.MaxJobTimeout = max
	return nil
}

// DefaultStateDir is where a worker remembers its spool (Options.StateDir):
// BENCHFLEET_STATE_DIR, else systemd's StateDirectory= ($STATE_DIRECTORY),
// else the XDG state directory; "" when none is known.
func DefaultStateDir() string {
	if d := os.Getenv("BENCHFLEET_STATE_DIR"); d != "" {
		return d
	}
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "benchfleet")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "benchfleet")
	}
	return ""
}
