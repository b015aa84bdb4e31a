package device

import (
	"context"
	"io"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// PhaseSetup is provisioning the job's build (its test tree and an
// environment with its wheels) before the harness starts.
const PhaseSetup = "setup"

// Provisioner makes the environment a job's build runs in: the test tree
// of a repository at a commit and an environment with the job's wheels
// installed over the harness's interpreter (device/build). Harness runners
// use one for a job that names wheels (protocol.Source.Wheels).
type Provisioner interface {
	// Provision returns a lease on the build req names, made once and
	// cached. log receives the output of the tools it runs (git, pip).
	// Errors are typed: *InvalidError for a fault of the job (a wheel
	// whose sha256 differs or that is missing from the store, an unknown
	// repository, a commit the mirror cannot fetch), *BenchmarkError when
	// installing a verified wheel fails (the job's build is broken),
	// *HostError when the host cannot make builds (its cache disk is
	// full, its mirror broken).
	Provision(ctx context.Context, req BuildRequest, log io.Writer) (*BuildLease, error)
}

// BuildRequest names a build: the base interpreter the environment is
// made over, the test tree and the wheels.
type BuildRequest struct {
	// Python is the base interpreter (an absolute path).
	Python string
	// Repo is the job's source.repo, Commit its full commit id.
	Repo, Commit string
	Wheels       []protocol.Wheel
}

// BuildLease is a provisioned build in use: while it is held the cache
// keeps it. Release it when the job is done.
type BuildLease struct {
	// Python is the environment's interpreter, Checkout the test tree.
	Python, Checkout string
	// Hit is set when the build was ready (made by an earlier job or by
	// another slot at the same time), unset when this request made it.
	Hit bool
	// Setup is how long Provision took.
	Setup time.Duration
	// Release gives the lease back; it may be called more than once.
	Release func()
}

// BuildRecorder is a Recorder that keeps which build a job ran
// (protocol.Result.Build). A runner that knows tells it once per run.
type BuildRecorder interface {
	Build(protocol.BuildInfo)
}
