package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/protocol"
)

// The example CI matrices parse and expand; with a commit, the CI matrix
// runs at high priority (the default) and the nightly at low (its own).
func TestDeployCIExamples(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "deploy", "ci")
	a := &app{}
	for _, tc := range []struct {
		file string
		prio protocol.Priority
	}{{"matrix-ci.yaml", protocol.PriorityHigh}, {"matrix-nightly.yaml", protocol.PriorityLow}} {
		f := &submitFlags{matrix: filepath.Join(root, tc.file), commit: "0123456789abcdef", branch: "main", repo: "acme/fleet"}
		sub, err := a.buildSubmission(f)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if sub.Priority != tc.prio || len(sub.Jobs) == 0 || sub.Jobs[0].Priority != tc.prio {
			t.Errorf("%s: priority %s with %d jobs, want %s", tc.file, sub.Priority, len(sub.Jobs), tc.prio)
		}
		again, err := a.buildSubmission(f)
		if err != nil || again.Run != sub.Run || !strings.HasPrefix(sub.Run, "ci-fleet-0123456789ab-") {
			t.Errorf("%s: run ids %q and %q, want one derived from the commit", tc.file, sub.Run, again.Run)
		}
		// An explicit priority wins over the CI default.
		f.priority = "normal"
		if sub, err := a.buildSubmission(f); err != nil || sub.Priority != protocol.PriorityNormal {
			t.Errorf("%s with --priority normal: %v %v", tc.file, sub, err)
		}
	}
	// Without a commit the default stays normal.
	sub, err := a.buildSubmission(&submitFlags{pool: "sim", model: "m", batchSize: 1, loopCount: 1})
	if err != nil || sub.Priority != protocol.PriorityNormal {
		t.Errorf("no commit: %v %v, want normal priority", sub, err)
	}

	data, err := os.ReadFile(filepath.Join(root, "github-actions.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	want := map[string][]string{
		"ci":      {"benchfleet submit", "--matrix deploy/ci/matrix-ci.yaml", "--build-wheel dist/*.whl", "--wait", "--gate", "--junit", `--summary-md "$GITHUB_STEP_SUMMARY"`},
		"nightly": {"benchfleet submit", "--matrix deploy/ci/matrix-nightly.yaml", "--run \"nightly-"},
	}
	for job, parts := range want {
		var all strings.Builder
		for _, s := range wf.Jobs[job].Steps {
			all.WriteString(s.Run)
		}
		for _, p := range parts {
			if !strings.Contains(all.String(), p) {
				t.Errorf("github-actions.yml job %s: no %q", job, p)
			}
		}
	}
}
