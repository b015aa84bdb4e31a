package submit_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// A re-run of CI for one commit that rebuilt its wheels without
// SOURCE_DATE_EPOCH brings the same wheel names with other bytes. Its run
// id is derived from the repository, the commit, the matrix and the
// wheels' names, so it is the run already submitted, and the submit
// re-attaches to it: nothing new is queued, the run keeps the build it was
// first submitted with, and the warning names both sha256s. A wheel of
// another name (a new version) is another build: another run.
func TestRebuiltWheelsReattach(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	p := &submit.Submitter{JS: f.JS, Runs: f.Topo.Runs, Jobs: f.Topo.Jobs, Store: f.Store, Log: zerolog.Nop()}
	matrix := filepath.Join(t.TempDir(), "ci.yaml")
	if err := os.WriteFile(matrix, []byte(`source: {project: tt-forge}
defaults:
  benchmark: {model: resnet50, test: "forge/test/benchmark/test_vision.py::test_resnet50", loop_count: 10}
matrix:
  pool: [n150]
  batch_size: [1, 4]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two builds of one commit: the same wheel name, other bytes.
	wheel := func(build string) (path, sum string) {
		return buildtest.Wheel(t, t.TempDir(), "forge", "1.0", map[string]string{"forge/__init__.py": "BUILD = " + build + "\n"})
	}
	first, firstSum := wheel("1")
	second, secondSum := wheel("2")
	if filepath.Base(first) != filepath.Base(second) || firstSum == secondSum {
		t.Fatalf("builds %s %s and %s %s: want one name, two sha256s", first, firstSum, second, secondSum)
	}
	submission := func(wheel string) *submit.Submission {
		o := submit.SubmitOptions{MatrixFile: matrix, Commit: "0123456789abcdef0123456789abcdef01234567", Branch: "main", Repo: "acme/forge",
			CIRunID: "41", BuildWheels: []string{wheel}}
		s, _, err := o.Submission(submit.Env{Submitter: "ci"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := submission(first)
	res, err := p.Submit(t.Context(), *s1)
	if err != nil || res.Published != 2 || len(res.Warnings) != 0 {
		t.Fatalf("first submit: %+v, %v; want 2 jobs published, no warning", res, err)
	}
	before, _ := f.Pending(t, "n150", protocol.PriorityHigh)

	s2 := submission(second)
	if s2.Run != s1.Run {
		t.Fatalf("the rebuild's run id is %s, the first build's %s: want one run per commit and matrix", s2.Run, s1.Run)
	}
	res, err = p.Submit(t.Context(), *s2)
	if err != nil || !res.Attached || res.Published != 0 {
		t.Fatalf("the rebuild's submit: %+v, %v; want re-attached, nothing published", res, err)
	}
	if after, _ := f.Pending(t, "n150", protocol.PriorityHigh); after != before {
		t.Errorf("the rebuild's submit queued %d more jobs", after-before)
	}
	if w := res.Manifest.Source.Wheels; len(w) != 1 || w[0].SHA256 != firstSum {
		t.Errorf("the run's wheels are %+v, want the first build's (%s)", w, firstSum)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], firstSum+" in the run, "+secondSum+" now") ||
		!strings.Contains(res.Warnings[0], "measures the build it was first submitted with") {
		t.Errorf("warnings %q, want one naming both sha256s and which build the run measures", res.Warnings)
	}
	for _, j := range s2.Jobs {
		if j.Source.Wheels[0].SHA256 != secondSum {
			t.Errorf("Submit changed the caller's job %s: wheels %+v", j.ID, j.Source.Wheels)
		}
	}

	// Another version is another build, and another run.
	other, _ := buildtest.Wheel(t, t.TempDir(), "forge", "1.1", map[string]string{"forge/__init__.py": "BUILD = 1\n"})
	if s3 := submission(other); s3.Run == s1.Run {
		t.Errorf("forge 1.1 gets run %s, forge 1.0's", s3.Run)
	} else {
		// Given the run's id, it is refused, naming the wheels.
		s3.Run = s1.Run
		for _, j := range s3.Jobs {
			j.Run = s1.Run
			_, j.ID = j.CellID()
		}
		if _, err := p.Submit(t.Context(), *s3); !errors.Is(err, submit.ErrRunDiffers) {
			t.Errorf("forge 1.1 under forge 1.0's run: %v, want ErrRunDiffers", err)
		}
	}
}
