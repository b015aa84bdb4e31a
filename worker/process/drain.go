package process

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/dirlock"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// DrainSpool uploads every result waiting in the spool folder dir (a
// worker's spool it no longer runs on) to store, in spool order, and says
// what became of them (spool.Spool.Drain). A spool a running worker
// holds is refused with an *OptionError: that worker uploads it itself.
func DrainSpool(ctx context.Context, dir string, store storage.Bucket, log zerolog.Logger) (spool.DrainReport, error) {
	lock, err := acquire(dir, "benchfleet spool drain", "spool")
	if err != nil {
		return spool.DrainReport{}, err
	}
	defer lock.Unlock()
	sp, err := spool.New(dir, store, log)
	if err != nil {
		return spool.DrainReport{}, err
	}
	return sp.Drain(ctx)
}

// acquire locks dir for holder; a lock another process holds is an
// *OptionError naming option.
func acquire(dir, holder, option string) (*dirlock.Lock, error) {
	lock, err := dirlock.Acquire(dir, holder)
	if errors.Is(err, dirlock.ErrHeld) {
		return nil, &OptionError{Option: option, Err: err}
	}
	return lock, err
}
