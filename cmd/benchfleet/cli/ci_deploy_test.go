package cli

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ghStep is what the tests read of a GitHub Actions step.
type ghStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

// ghWorkflow is what the tests read of a GitHub Actions workflow.
type ghWorkflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions any               `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]struct {
		If          string            `yaml:"if"`
		Permissions any               `yaml:"permissions"`
		Env         map[string]string `yaml:"env"`
		Steps       []ghStep          `yaml:"steps"`
	} `yaml:"jobs"`
}

// readWorkflow parses deploy/ci/name and returns it with its text.
func readWorkflow(t *testing.T, name string) (*ghWorkflow, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	var wf ghWorkflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &wf, string(data)
}

// The example CI workflow submits the example matrices as the docs say
// (their expansion and priorities: producer's TestDeployCIMatrices).
func TestDeployCIExamples(t *testing.T) {
	t.Parallel()
	wf, _ := readWorkflow(t, "github-actions.yml")
	want := map[string][]string{
		"ci": {"benchfleet submit", "--matrix deploy/ci/matrix-ci.yaml", `--build-wheel "$build"/wheels/*.whl`, `--commit "$HEAD_SHA"`,
			"--wait", "--gate", "--junit", `--summary-md "$GITHUB_STEP_SUMMARY"`},
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

// readOnly reports whether a workflow's or job's permissions grant no
// write: absent (the workflow's), {} or "read-all", or a map of reads.
func readOnly(p any) bool {
	switch p := p.(type) {
	case nil:
		return true
	case string:
		return p == "read-all" || p == "{}"
	case map[string]any:
		for _, v := range p {
			if v != "read" && v != "none" {
				return false
			}
		}
		return true
	}
	return false
}

var prBuild = regexp.MustCompile(`\bpip3?\s+(wheel|install|download)\b|python[0-9.]*\s+(-m\s+(pip|build)|setup\.py)|\bpython -m build\b|\bmake\b|\bnpm\b|\bpytest\b`)

// The shipped CI is two workflows, so that the code of a pull request
// never runs where a secret is (issue 31):
//   - github-actions-build.yml runs the pull request's build on
//     `pull_request` with read-only permissions and no secret: no
//     `secrets.` anywhere, no token it could use; it builds reproducibly
//     (SOURCE_DATE_EPOCH from the commit, PYTHONHASHSEED=0) and uploads
//     the wheels as an artifact named by the commit;
//   - github-actions.yml (workflow_run of the first) holds the secrets: it
//     never checks out the pull request's commit, builds or runs anything
//     of it, downloads the artifact of the triggering run, and submits a
//     fork's pull request as the untrusted NATS user at normal priority.
//
// Neither uses pull_request_target.
func TestDeployCIWorkflowsSplitTrust(t *testing.T) {
	t.Parallel()
	build, buildText := readWorkflow(t, "github-actions-build.yml")
	priv, privText := readWorkflow(t, "github-actions.yml")

	for name, text := range map[string]string{"github-actions-build.yml": buildText, "github-actions.yml": privText} {
		if strings.Contains(text, "pull_request_target") {
			t.Errorf("%s uses pull_request_target: it must never run with a pull request's code", name)
		}
	}

	// The unprivileged build.
	if _, ok := build.On["pull_request"]; !ok {
		t.Errorf("github-actions-build.yml: not on pull_request (on: %v)", build.On)
	}
	if strings.Contains(buildText, "secrets.") || strings.Contains(buildText, "github.token") || strings.Contains(buildText, "GITHUB_TOKEN") {
		t.Errorf("github-actions-build.yml, which runs the pull request's code, names a secret or the token")
	}
	if p, ok := build.Permissions.(map[string]any); !ok || len(p) != 1 || p["contents"] != "read" {
		t.Errorf("github-actions-build.yml permissions %v, want exactly contents: read", build.Permissions)
	}
	built, uploaded := false, false
	for name, job := range build.Jobs {
		if !readOnly(job.Permissions) {
			t.Errorf("github-actions-build.yml job %s: permissions %v, want read-only", name, job.Permissions)
		}
		for _, st := range job.Steps {
			if prBuild.MatchString(st.Run) {
				built = true
				for _, want := range []string{"SOURCE_DATE_EPOCH=\"$(git log -1 --format=%ct)\"", "export SOURCE_DATE_EPOCH", "PYTHONHASHSEED=0"} {
					if !strings.Contains(st.Run, want) {
						t.Errorf("github-actions-build.yml step %q builds without %q (a re-run must make the same wheels)", st.Name, want)
					}
				}
			}
			if strings.HasPrefix(st.Uses, "actions/checkout@") && st.With["persist-credentials"] != "false" {
				t.Errorf("github-actions-build.yml: checkout keeps the token in .git (persist-credentials: %q)", st.With["persist-credentials"])
			}
			if strings.HasPrefix(st.Uses, "actions/upload-artifact@") && strings.Contains(st.With["name"], "head.sha") {
				uploaded = true
			}
		}
	}
	if !built || !uploaded {
		t.Errorf("github-actions-build.yml: built %v, uploaded an artifact named by the commit %v; want both", built, uploaded)
	}

	// The privileged submit.
	wr, ok := priv.On["workflow_run"].(map[string]any)
	if !ok || len(priv.On) == 0 {
		t.Fatalf("github-actions.yml: not on workflow_run (on: %v)", priv.On)
	}
	if ws, _ := wr["workflows"].([]any); len(ws) != 1 || ws[0] != build.Name {
		t.Errorf("github-actions.yml: workflow_run of %v, want [%s] (the build's name)", wr["workflows"], build.Name)
	}
	for _, ev := range []string{"pull_request", "push"} {
		if _, ok := priv.On[ev]; ok {
			t.Errorf("github-actions.yml runs on %s: only part 1 may", ev)
		}
	}
	if !readOnly(priv.Permissions) {
		t.Errorf("github-actions.yml: workflow permissions %v, want none or read-only (jobs ask for theirs)", priv.Permissions)
	}
	for name, job := range priv.Jobs {
		if p, ok := job.Permissions.(map[string]any); ok {
			for k, v := range p {
				if v == "write" && k != "statuses" {
					t.Errorf("github-actions.yml job %s: %s: write, want only statuses: write (the gate's commit status)", name, k)
				}
			}
		}
		for _, st := range job.Steps {
			where := "github-actions.yml job " + name + " step " + cmp.Or(st.Name, st.Uses)
			if prBuild.MatchString(st.Run) || strings.Contains(st.Uses, "setup-python") {
				t.Errorf("%s builds or runs Python: the privileged workflow runs nothing of the commit", where)
			}
			if strings.HasPrefix(st.Uses, "actions/checkout@") {
				if st.With["ref"] != "" || st.With["repository"] != "" {
					t.Errorf("%s checks out %q of %q: only the default branch of this repository (its matrices)", where, st.With["ref"], st.With["repository"])
				}
				if st.With["persist-credentials"] != "false" {
					t.Errorf("%s keeps the token in .git", where)
				}
			}
		}
	}
	ci := priv.Jobs["ci"]
	if !strings.Contains(ci.If, "workflow_run.conclusion == 'success'") {
		t.Errorf("github-actions.yml job ci runs if %q, want only after a successful build", ci.If)
	}
	const fork = "github.event.workflow_run.head_repository.full_name == github.repository"
	for k, want := range map[string]string{
		"NATS_USER":         "${{ " + fork + " && 'producer' || 'untrusted' }}",
		"NATS_INBOX_PREFIX": "${{ " + fork + " && '_INBOX_producer' || '_INBOX_untrusted' }}",
		"FORK":              "${{ github.event.workflow_run.head_repository.full_name != github.repository }}",
		"HEAD_SHA":          "${{ github.event.workflow_run.head_sha }}",
	} {
		if ci.Env[k] != want {
			t.Errorf("github-actions.yml job ci env %s = %q, want %q", k, ci.Env[k], want)
		}
	}
	var downloaded, submitted bool
	for _, st := range ci.Steps {
		if strings.HasPrefix(st.Uses, "actions/download-artifact@") {
			downloaded = st.With["run-id"] == "${{ github.event.workflow_run.id }}" && st.With["github-token"] != "" &&
				st.With["name"] == "benchfleet-build-${{ github.event.workflow_run.head_sha }}"
		}
		if strings.Contains(st.Run, "benchfleet submit") {
			submitted = true
			if st.Env["NATS_PASSWORD"] != "${{ "+fork+" && secrets.BENCHFLEET_NATS_PASSWORD || secrets.BENCHFLEET_UNTRUSTED_NATS_PASSWORD }}" {
				t.Errorf("github-actions.yml submit: NATS_PASSWORD %q, want the untrusted user's for forks", st.Env["NATS_PASSWORD"])
			}
			for _, want := range []string{`if [ "$FORK" = true ]`, "--priority normal", `--run "untrusted-`} {
				if !strings.Contains(st.Run, want) {
					t.Errorf("github-actions.yml submit: no %q (a fork's run: untrusted-…, normal priority)", want)
				}
			}
		}
	}
	if !downloaded || !submitted {
		t.Errorf("github-actions.yml job ci: downloads the triggering run's artifact %v, submits %v; want both", downloaded, submitted)
	}
}
