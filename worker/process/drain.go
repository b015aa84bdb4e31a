package process

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/storage"
)

// DrainSpool uploads every result waiting in the spool folder dir (a
// worker's spool it no longer runs on) to store, in spool order, and says
// what became of them (storage.Spool.Drain). A spool a running worker
// holds is refused with an *OptionError: that worker uploads it itself.
func DrainSpool(ctx context.Context, dir string, store storage.Bucket, log zerolog.Logger) (storage.DrainReport, error) {
	lock, err := dirlock.Acquire(dir, "benchfleet spool drain")
	if err != nil {
		if errors.Is(err, dirlock.ErrHeld) {
			return storage.DrainReport{}, &OptionError{Option: "spool", Err: err}
		}
		return storage.DrainReport{}, err
	}
	defer lock.Unlock()
	spool, err := storage.NewSpool(dir, store, log)
	if err != nil {
		return storage.DrainReport{}, err
	}
	return spool.Drain(ctx)
}
