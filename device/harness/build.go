package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/protocol"
)

// maxSetupLogBytes bounds what provisioning (git, pip) writes to a job's
// log.txt.
const maxSetupLogBytes = 4 << 20

// provision returns the interpreter and checkout job runs with. A job
// that names wheels gets its own build from Config.Builds (its commit's
// test tree, an environment with its wheels over the harness's
// interpreter), leased until the run ends: release it. Any other job runs
// the host's build (Config.Workdir and Config.Python), and a commit it
// names is only a label; either way rec learns which (Result.Build).
func (r *Runner) provision(ctx context.Context, job *protocol.Job, rec device.Recorder, logFile io.Writer, log zerolog.Logger) (python, checkout string, lease *device.BuildLease, err error) {
	src := job.Source
	if len(src.Wheels) == 0 {
		recordBuild(rec, protocol.BuildInfo{Kind: protocol.BuildHost, Commit: src.Commit})
		return r.python, r.cfg.Workdir, nil, nil
	}
	if r.cfg.Builds == nil {
		return "", "", nil, device.Invalid("source.wheels: this host makes no builds for the %s runner (its worker config has no builds.repos)", r.Name())
	}
	rec.Phase(device.PhaseSetup)
	w := &cappedWriter{w: logFile, left: maxSetupLogBytes}
	fmt.Fprintf(w, "[benchfleet: provisioning %s at %s with %d wheel(s) over %s]\n", src.Repo, src.Commit, len(src.Wheels), r.python)
	info := protocol.BuildInfo{Kind: protocol.BuildProvisioned, Commit: src.Commit}
	for _, wh := range src.Wheels {
		info.Wheels = append(info.Wheels, protocol.WheelInfo{Name: wh.Name(), SHA256: wh.SHA256})
	}
	recordBuild(rec, info) // a build that fails to be made is still named
	lease, err = r.cfg.Builds.Provision(ctx, device.BuildRequest{Python: r.python, Repo: src.Repo, Commit: src.Commit, Wheels: src.Wheels}, w)
	if err != nil {
		fmt.Fprintf(w, "[benchfleet: provisioning failed: %v]\n", err)
		var host *device.HostError
		var inv *device.InvalidError
		var bench *device.BenchmarkError
		switch {
		case ctx.Err() != nil:
			// The job's time ran out (or its run was cancelled, or the
			// worker is stopping: the worker tells them apart) before its
			// build was ready: no board ran anything.
			return "", "", nil, device.SetupFailed("%s: the job's build was not ready when the job ended: %v", r.Name(), ctx.Err())
		case errors.As(err, &host):
			// The cache's own finding (a full disk, a broken mirror), not
			// the job's claim: the host needs no probe to believe it.
			return "", "", nil, &device.HostError{Reason: "build cache: " + host.Reason, Found: true}
		case errors.As(err, &inv), errors.As(err, &bench):
			return "", "", nil, err
		case device.IsStore(err):
			// The store did not serve a wheel: the worker hands the job
			// back without using a delivery; the board ran nothing.
			return "", "", nil, &device.InfraError{Err: fmt.Errorf("%s: making the job's build: %w", r.Name(), err), Setup: true}
		default:
			// The store failing to serve a wheel: worth a retry, and not
			// the board's failure.
			return "", "", nil, device.SetupFailed("%s: making the job's build: %v", r.Name(), err)
		}
	}
	info.Cache, info.SetupS = protocol.CacheMiss, lease.Setup.Seconds()
	if lease.Hit {
		info.Cache = protocol.CacheHit
	}
	recordBuild(rec, info)
	fmt.Fprintf(w, "[benchfleet: build ready (cache %s) in %s: python %s, checkout %s]\n", info.Cache, lease.Setup.Round(1e6), lease.Python, lease.Checkout)
	log.Info().Str("commit", src.Commit).Str("cache", info.Cache).Dur("setup", lease.Setup).Msg("job's build provisioned")
	return lease.Python, lease.Checkout, lease, nil
}

func recordBuild(rec device.Recorder, info protocol.BuildInfo) {
	if br, ok := rec.(device.BuildRecorder); ok {
		br.Build(info)
	}
}

// withoutSiteDirs drops site-packages and dist-packages directories from
// a PYTHONPATH list.
func withoutSiteDirs(path []string) []string {
	var out []string
	for _, p := range path {
		if b := filepath.Base(p); b != "site-packages" && b != "dist-packages" {
			out = append(out, p)
		}
	}
	return out
}
