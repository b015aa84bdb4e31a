package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/storage"
)

// The build a submit measures: wheel files it uploads (--build-wheel) and
// wheels already in the store (--wheel, the matrix's source.wheels).

var wheelFlagsHelp = longHelp("part-wheels")

// submitArgs accepts no arguments but wheel files after --build-wheel: the
// shell expands --build-wheel dist/*.whl into one flag and more files.
func submitArgs(f *submitFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if len(f.opts.BuildWheels) == 0 {
			return cobra.NoArgs(cmd, args)
		}
		for _, a := range args {
			if !strings.HasSuffix(a, ".whl") {
				return usageErr("unexpected argument %q: submit takes flags, and after --build-wheel only more .whl files", a)
			}
		}
		f.opts.BuildWheels = append(f.opts.BuildWheels, args...)
		return nil
	}
}

// needsWheelStore is a usage error when the run's jobs name wheels and no
// store is given: the workers fetch the wheels from it.
func (a *app) needsWheelStore(sub *submit.Submission) error {
	if a.storeURL != "" || len(sub.Source.Wheels) == 0 {
		return nil
	}
	return usageErr("wheels (--build-wheel, --wheel, source.wheels) need --store (or BENCHFLEET_STORE): the workers fetch them from it")
}

// stageWheels uploads the --build-wheel files and checks that the store
// holds every other wheel the jobs name, with a line per wheel and build
// record on stderr (one the store refused to write is a warning).
// A wheel named by a key the store lacks is a usage error naming the key.
func (a *app) stageWheels(ctx context.Context, b storage.Bucket, files []wheels.WheelFile, sub *submit.Submission, baseline string) error {
	if len(sub.Source.Wheels) == 0 {
		return nil
	}
	err := wheels.StageWheels(ctx, b, files, sub.Jobs, baseline, func(e wheels.WheelEvent) {
		if e.State == wheels.BuildRecordFailed {
			fmt.Fprintf(a.stderr, "benchfleet: warning: %s\n", e)
		} else if line := e.String(); line != "" {
			fmt.Fprintln(a.stderr, line)
		}
	})
	if errors.Is(err, wheels.ErrWheelMissing) {
		return usageErr("--wheel / source.wheels: %v", err)
	}
	if err != nil {
		return fmt.Errorf("submit: %w (nothing was published)", err)
	}
	return nil
}
