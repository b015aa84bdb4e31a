package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The example CI workflow submits the example matrices as the docs say
// (their expansion and priorities: producer's TestDeployCIMatrices).
func TestDeployCIExamples(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "deploy", "ci")
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
