package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/spool"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// checkStart refuses to start worker id when o.CheckID and another live
// worker holds the id, or when a spool it used before still holds results
// and it starts with another one (o.Spool; "" = none) — the ledger in
// o.StateDir, and with o.CheckID the id's last heartbeat in bench-workers,
// name it.
func (p *Process) checkStart(ctx context.Context, o Options, ledger spool.Ledger, id string) error {
	var also []string
	if o.CheckID {
		host, _ := os.Hostname()
		kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		kv, err := p.js.KeyValue(kctx, protocol.BucketWorkers)
		if err == nil {
			prev, err := fleet.CheckWorkerID(kctx, kv, id, host, os.Getpid(), processAlive)
			if errors.Is(err, fleet.ErrWorkerIDLive) {
				return &OptionError{Option: "--id", Err: err}
			}
			if err != nil {
				p.log.Warn().Err(err).Str("worker", id).Msg("could not read this id's last heartbeat; not checked for a live twin")
			}
			if prev != nil && prev.Host == host && prev.Spool != nil {
				also = append(also, prev.Spool.Path)
			}
		} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
			p.log.Warn().Err(err).Str("worker", id).Msg("could not read bench-workers; this id is not checked for a live twin")
		}
	}
	if err := ledger.Check(id, o.Spool, also...); err != nil {
		if errors.Is(err, spool.ErrMoved) {
			return &OptionError{Option: "--spool", Err: err}
		}
		p.log.Warn().Err(err).Msg("could not check this worker's earlier spool")
	}
	return nil
}

// processAlive reports whether a process with pid runs on this host.
func processAlive(pid int) bool {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = proc.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeStaleTemps removes what Puts killed mid-write left in a file store.
func removeStaleTemps(ctx context.Context, fb *file.Bucket, log zerolog.Logger) {
	n, err := fb.RemoveStaleTemps(ctx, file.StaleTempAge)
	if err != nil {
		log.Warn().Err(err).Msg("could not remove stale temporary files from the file store")
		return
	}
	if n > 0 {
		log.Info().Int("removed", n).Str("store", fb.Root()).Msg("removed temporary files of writes killed midway")
	}
}

// isolations describes, by runner name, the box each harness runner of
// slots runs its jobs in.
func isolations(slots []worker.Slot) map[string]string {
	out := map[string]string{}
	for _, s := range slots {
		if r, ok := s.Runner.(interface{ Isolation() string }); ok {
			out[s.Runner.Name()] = r.Isolation()
		}
	}
	return out
}

// warnReachable warns, loudly, of every file with the worker's secrets or
// state that the job user could read: the config, the NATS credentials,
// the AWS shared files, the spool and a file store. A harness job is a
// pull request's code.
func (p *Process) warnReachable(o Options) {
	var user string
	if o.File != nil {
		user = o.File.Isolation.User
	}
	paths := []string{o.ConfigPath, o.Spool}
	for _, k := range []string{"NATS_CREDS", "NATS_NKEY", "NATS_PASSWORD_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"} {
		paths = append(paths, os.Getenv(k))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"))
	}
	if dir, ok := strings.CutPrefix(o.StoreURL, "file://"); ok {
		paths = append(paths, dir)
	}
	for _, path := range paths {
		if path == "" {
			continue
		}
		if ok, err := box.Reachable(user, path); err == nil && ok {
			p.log.Warn().Str("path", path).Msg("readable by the harness's job user: a pull request's code could read it (chmod o-r, or a directory it cannot enter)")
			tell(o.Out, "WARNING: %s is readable by the harness's job user\n", path)
		}
	}
}
