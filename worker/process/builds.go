package process

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/build"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/worker/configfile"
	"github.com/benchfleet/benchfleet/worker/metrics"
)

// storeRef is the worker's store, opened after its slots are built: the
// build cache fetches wheels from it once it is set.
type storeRef struct {
	b atomic.Pointer[storage.Bucket]
}

func (s *storeRef) set(b storage.Bucket) { s.b.Store(&b) }

func (s *storeRef) get(ctx context.Context, key string) (io.ReadCloser, error) {
	b := s.b.Load()
	if b == nil {
		return nil, errors.New("the worker's store is not open yet")
	}
	return (*b).Get(ctx, key)
}

// buildCache opens the host's build cache (device/build) when the config
// names the repositories test trees come from (builds.repos); without
// them it returns nil, and jobs that name wheels are invalid on this
// host. reg, if set, gets the cache's metrics.
func buildCache(wf *configfile.File, workDir string, store *storeRef, reg prometheus.Registerer, log zerolog.Logger) (*build.Cache, error) {
	if wf == nil || len(wf.Builds.Repos) == 0 {
		return nil, nil
	}
	dir, maxBytes, err := wf.Builds.Limits(workDir)
	if err != nil {
		return nil, err
	}
	fetchTimeout, fetchPerMiB, err := wf.Builds.FetchDeadlines()
	if err != nil {
		return nil, err
	}
	var cache atomic.Pointer[build.Cache]
	m, err := metrics.NewBuildCache(reg, func() int64 {
		if c := cache.Load(); c != nil {
			return c.Bytes()
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	c, err := build.New(build.Config{Dir: dir, MaxBytes: maxBytes, Repos: wf.Builds.Repos, Fetch: store.get,
		NotFound:     func(err error) bool { return errors.Is(err, storage.ErrNotFound) },
		Unavailable:  func(err error) bool { return errors.Is(err, storage.ErrUnavailable) },
		FetchTimeout: fetchTimeout, FetchPerMiB: fetchPerMiB,
		Log: log, OnSetup: m.Setup})
	if err != nil {
		return nil, &OptionError{Option: "config builds", Err: err}
	}
	cache.Store(c)
	log.Info().Str("dir", dir).Int64("max_bytes", maxBytes).Int("repos", len(wf.Builds.Repos)).Msg("build cache ready: jobs that name wheels run their own build")
	return c, nil
}

// provisioner is c as a device.Provisioner: nil (no interface value) when
// there is no cache.
func provisioner(c *build.Cache) device.Provisioner {
	if c == nil {
		return nil
	}
	return c
}
