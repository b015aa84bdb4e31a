package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// The build a submit measures: wheel files it uploads (--build-wheel) and
// wheels already in the store (--wheel, the matrix's source.wheels).

const wheelFlagsHelp = `Build under test: --build-wheel FILE (repeatable; a pattern such as
'dist/*.whl' is expanded, and so are the files a shell expanded it into)
uploads each wheel to the store at builds/sha256/<sha256>/<name>.whl, once
(a wheel already there is not uploaded again), and every job installs
them; --wheel KEY names a wheel already in the store by that key. Wheels
need --repo and the full --commit (default $GITHUB_REPOSITORY and
$GITHUB_SHA): the worker runs that commit's test tree with them. Without
wheels a job runs the host's installed build, and the commit is a label.
The run id of a commit covers its wheels: a rebuilt wheel with other bytes
is a new run.`

// submitArgs accepts no arguments but wheel files after --build-wheel: the
// shell expands --build-wheel dist/*.whl into one flag and more files.
func submitArgs(f *submitFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if len(f.buildWheels) == 0 {
			return cobra.NoArgs(cmd, args)
		}
		for _, a := range args {
			if !strings.HasSuffix(a, ".whl") {
				return usageErr("unexpected argument %q: submit takes flags, and after --build-wheel only more .whl files", a)
			}
		}
		f.buildWheels = append(f.buildWheels, args...)
		return nil
	}
}

// addWheels hashes the --build-wheel files (into f.wheelFiles), reads the
// --wheel keys and adds both to the matrix's source.wheels; a run with
// wheels needs a repository and a full commit. Errors are usage errors
// naming the flag and the file or key.
func addWheels(f *submitFlags, m *producer.Matrix) error {
	if len(f.buildWheels) == 0 && len(f.wheelKeys) == 0 && len(m.Source.Wheels) == 0 && m.Source.Build.URL == "" {
		return nil
	}
	if m.Source.Repo == "" {
		return usageErr("wheels (--build-wheel, --wheel, source.wheels) need --repo (default $GITHUB_REPOSITORY): the repository whose test tree at --commit runs with them")
	}
	if m.Source.Commit == "" {
		return usageErr("wheels (--build-wheel, --wheel, source.wheels) need --commit (default $GITHUB_SHA): the full 40-hex-digit commit for the worker to fetch the test tree of %s at",
			m.Source.Repo)
	}
	if !protocol.ValidCommit(m.Source.Commit) {
		return usageErr("--commit %q is not a full commit: wheels (--build-wheel, --wheel, source.wheels) need the full 40-hex-digit commit (lowercase; 64 digits in a SHA-256 repository) for the worker to fetch the test tree of %s at it, and a mirror cannot fetch an abbreviation",
			m.Source.Commit, m.Source.Repo)
	}
	if f.wheelFiles == nil {
		var paths []string
		for _, p := range f.buildWheels {
			if !strings.ContainsAny(p, "*?[") {
				paths = append(paths, p)
				continue
			}
			matches, err := filepath.Glob(p)
			if err != nil || len(matches) == 0 {
				return usageErr("--build-wheel %q: no file matches", p)
			}
			paths = append(paths, matches...)
		}
		seen := map[string]bool{}
		for _, p := range paths {
			wf, err := producer.ReadWheelFile(p)
			if err != nil {
				return usageErr("--build-wheel: %v", err)
			}
			if !seen[wf.Key()] {
				seen[wf.Key()] = true
				f.wheelFiles = append(f.wheelFiles, wf)
			}
		}
	}
	var wheels []producer.WheelSpec
	if b := m.Source.Build; b.URL != "" && (len(f.wheelFiles) > 0 || len(f.wheelKeys) > 0) {
		// The one-wheel form joins the others (protocol.Job.Normalize).
		wheels = append(wheels, producer.WheelSpec{URL: b.URL, SHA256: b.SHA256})
		m.Source.Build.URL, m.Source.Build.SHA256 = "", ""
	}
	for _, wf := range f.wheelFiles {
		wheels = append(wheels, producer.WheelSpec{URL: wf.Key(), SHA256: wf.SHA256})
	}
	for _, k := range f.wheelKeys {
		w, err := producer.ParseWheelKey(k)
		if err != nil {
			return usageErr("--wheel: %v", err)
		}
		wheels = append(wheels, producer.WheelSpec{URL: w.URL, SHA256: w.SHA256})
	}
	m.Source.Wheels = append(m.Source.Wheels, wheels...)
	return nil
}

// needsWheelStore is a usage error when the run's jobs name wheels and no
// store is given: the workers fetch the wheels from it.
func (a *app) needsWheelStore(sub *producer.Submission) error {
	if a.storeURL != "" || len(sub.Source.Wheels) == 0 {
		return nil
	}
	return usageErr("wheels (--build-wheel, --wheel, source.wheels) need --store (or BENCHFLEET_STORE): the workers fetch them from it")
}

// stageWheels uploads the --build-wheel files and checks that the store
// holds every other wheel the jobs name, with a line per wheel on stderr.
// A wheel named by a key the store lacks is a usage error naming the key.
func (a *app) stageWheels(ctx context.Context, b storage.Bucket, f *submitFlags, sub *producer.Submission) error {
	if len(sub.Source.Wheels) == 0 {
		return nil
	}
	err := producer.StageWheels(ctx, b, f.wheelFiles, sub.Jobs, func(e producer.WheelEvent) {
		switch e.State {
		case producer.WheelUploading:
			if e.Done == 0 {
				fmt.Fprintf(a.stderr, "wheel %s (%s): uploading to %s\n", e.Name, sizeText(e.Size), e.Key)
			} else {
				fmt.Fprintf(a.stderr, "wheel %s: %d%% (%s of %s)\n", e.Name, e.Done*100/e.Size, sizeText(e.Done), sizeText(e.Size))
			}
		case producer.WheelUploaded:
			fmt.Fprintf(a.stderr, "wheel %s (%s): uploaded\n", e.Name, sizeText(e.Size))
		case producer.WheelPresent:
			fmt.Fprintf(a.stderr, "wheel %s (%s): already in the store at %s\n", e.Name, sizeText(e.Size), e.Key)
		case producer.WheelFound:
			fmt.Fprintf(a.stderr, "wheel %s: in the store at %s\n", e.Name, e.Key)
		}
	})
	if errors.Is(err, producer.ErrWheelMissing) {
		return usageErr("--wheel / source.wheels: %v", err)
	}
	if err != nil {
		return fmt.Errorf("submit: %w (nothing was published)", err)
	}
	return nil
}

// sizeText is a byte count for people: 812.4 MiB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
