package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/device/build/buildtest"
	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// buildPython is the interpreter the shipped build step runs as `python`
// here: Debian's, which builds a wheel offline with its own pip,
// setuptools and wheel. Without them the test skips, or fails under
// BENCHFLEET_REQUIRE_PYTEST=1 (make test).
func buildPython(t *testing.T) string {
	t.Helper()
	py := buildtest.Python(t)
	if out, err := exec.Command(py, "-c", "import setuptools, wheel, pip").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("the shipped build step needs pip, setuptools and wheel for %s (python3-pip, python3-setuptools, python3-wheel: scripts/install-pytest.sh): %v %s", py, err, out)
		if os.Getenv("BENCHFLEET_REQUIRE_PYTEST") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// readShipped parses deploy/ci/name.
func readShipped(t *testing.T, name string) *workflow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../../deploy/ci", name))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &wf
}

// stepEnv is base with the workflow's, the job's and the step's env
// (their expressions evaluated with values) added, as GitHub sets them.
func stepEnv(base []string, values map[string]string, maps ...map[string]string) ([]string, error) {
	env := append([]string{}, base...)
	for _, m := range maps {
		for k, v := range m {
			var missing string
			v = expr.ReplaceAllStringFunc(v, func(e string) string {
				val, m := evalExpr(expr.FindStringSubmatch(e)[1], values)
				if m != "" {
					missing = m
				}
				return val
			})
			if missing != "" {
				return nil, fmt.Errorf("env %s uses ${{ %s }}, which this test does not know: add it to the test", k, missing)
			}
			env = append(env, k+"="+v)
		}
	}
	return env, nil
}

// A re-run of the shipped CI for one commit re-attaches to its run. The
// build job of deploy/ci/github-actions-build.yml (its steps' scripts as
// shipped, with Debian's pip offline) builds a tiny Python package of a
// real git repository's commit in a fresh clone, as each re-run's runner
// checks it out; the ci job of github-actions.yml submits the wheels to
// deploy/nats as shipped, waits and reports, for a commit of this
// repository (producer) and a fork's pull request (untrusted).
//   - As shipped (SOURCE_DATE_EPOCH, PYTHONHASHSEED), two builds — the
//     second checkout a day later, so every file has another mtime — give
//     one sha256.
//   - A build without SOURCE_DATE_EPOCH (a project's own) gives other
//     bytes; its submit still derives the same run, re-attaches to it
//     ("re-attaching, nothing new published", no job published to the
//     stream) and warns, on stderr and in the step summary, that the run
//     measures the build it was first submitted with, naming both sha256s.
func TestShippedCIRerunReattaches(t *testing.T) {
	py := buildPython(t)
	repo, ids := buildtest.Repo(t, map[string]string{
		"pyproject.toml": "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n" +
			"[project]\nname = \"fleetdemo\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"fleetdemo\"]\n",
		"fleetdemo/__init__.py": "VERSION = \"0.1.0\"\n",
	})
	commit := ids[0]
	binDir := t.TempDir()
	if err := os.Symlink(py, filepath.Join(binDir, "python")); err != nil {
		t.Fatal(err)
	}

	// The build job, on a runner of its own: a fresh clone of the commit
	// (its files' mtimes moved by age), the steps' scripts with the
	// workflow's env, pip offline. A build step with epoch false has the
	// SOURCE_DATE_EPOCH lines taken out. It returns the artifact's
	// directory and the wheel's sha256.
	buildWF := readShipped(t, "github-actions-build.yml")
	buildJob, ok := buildWF.Jobs["build"]
	if !ok {
		t.Fatal("github-actions-build.yml has no job build")
	}
	buildValues := map[string]string{"github.event.pull_request.head.sha": commit, "github.sha": "89abcdef0123456789abcdef0123456789abcdef",
		"github.event.pull_request.number": "7"}
	build := func(age time.Duration, epoch bool) (artifact, sum string, err error) {
		root, err := os.MkdirTemp(t.TempDir(), "runner")
		if err != nil {
			return "", "", err
		}
		work, runner, home := filepath.Join(root, "work"), filepath.Join(root, "temp"), filepath.Join(root, "home")
		for _, args := range [][]string{{"clone", "--quiet", repo, work}, {"-C", work, "checkout", "--quiet", "--detach", commit}} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				return "", "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		later := time.Now().Add(age)
		err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.Name() == ".git":
				return filepath.SkipDir
			}
			return os.Chtimes(p, later, later)
		})
		if err != nil {
			return "", "", err
		}
		for _, d := range []string{runner, home} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", "", err
			}
		}
		base := []string{"PATH=" + binDir + ":" + os.Getenv("PATH"), "HOME=" + home, "RUNNER_TEMP=" + runner,
			"PIP_NO_INDEX=1", "PIP_NO_BUILD_ISOLATION=0", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_CACHE_DIR=" + filepath.Join(home, "pip-cache")}
		built := false
		for _, st := range buildJob.Steps {
			if st.Run == "" {
				continue
			}
			script := st.Run
			if st.Name == "Build the wheels" {
				built = true
				if !epoch {
					var kept []string
					for _, line := range strings.Split(script, "\n") {
						if !strings.Contains(line, "SOURCE_DATE_EPOCH") {
							kept = append(kept, line)
						}
					}
					if len(kept) != strings.Count(script, "\n")+1-2 {
						return "", "", fmt.Errorf("the step %q no longer sets SOURCE_DATE_EPOCH in two lines: update the test\n%s", st.Name, script)
					}
					script = strings.Join(kept, "\n")
				}
			}
			env, err := stepEnv(base, buildValues, buildWF.Env, buildJob.Env, st.Env)
			if err != nil {
				return "", "", fmt.Errorf("build step %q: %w", st.Name, err)
			}
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
			cmd.Dir, cmd.Env = work, env
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", "", fmt.Errorf("build step %q: %v\n%s", st.Name, err, out)
			}
		}
		if !built {
			return "", "", fmt.Errorf("github-actions-build.yml has no step \"Build the wheels\"")
		}
		artifact = filepath.Join(runner, "benchfleet-build")
		whl, _ := filepath.Glob(filepath.Join(artifact, "wheels", "*.whl"))
		if len(whl) != 1 || filepath.Base(whl[0]) != "fleetdemo-0.1.0-py3-none-any.whl" {
			return "", "", fmt.Errorf("the build made wheels %v, want fleetdemo-0.1.0-py3-none-any.whl", whl)
		}
		data, err := os.ReadFile(whl[0])
		if err != nil {
			return "", "", err
		}
		h := sha256.Sum256(data)
		return artifact, hex.EncodeToString(h[:]), nil
	}
	// Three runners build at once: the first run's, a re-run's a day later
	// as shipped, and a re-run's of a build without SOURCE_DATE_EPOCH.
	type result struct {
		artifact, sum string
		err           error
	}
	var builds [3]result
	var wg sync.WaitGroup
	for i, b := range []struct {
		age   time.Duration
		epoch bool
	}{{0, true}, {24 * time.Hour, true}, {24 * time.Hour, false}} {
		wg.Go(func() {
			r := &builds[i]
			r.artifact, r.sum, r.err = build(b.age, b.epoch)
		})
	}
	defer wg.Wait() // a fatal setup below waits for the builds' use of t

	// Meanwhile the farm: deploy/nats as shipped, its topology applied by
	// the admin, a worker, and the benchfleet binary the ci job installs.
	srv := startSingle(t, "")
	bin := clitest.Binary(t)
	if err := os.Symlink(bin, filepath.Join(binDir, "benchfleet")); err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(bin, "topology", "apply")
	apply.Env = binEnv("NATS_URL="+srv.ClientURL(), "NATS_USER=admin", "NATS_PASSWORD="+passwords["admin"], "NATS_INBOX_PREFIX=_INBOX_admin")
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("topology apply as admin: %v\n%s", err, out)
	}
	storeDir := t.TempDir()
	startFarmWorker(t, srv.ClientURL(), "", storeDir)
	_, admin, _ := connectAs(t, natsconn.Options{URL: srv.ClientURL(), User: "admin", Password: passwords["admin"], InboxPrefix: "_INBOX_admin"})
	published := func(stream string) uint64 {
		s, err := admin.Stream(t.Context(), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	wg.Wait()
	for _, b := range builds {
		if b.err != nil {
			t.Fatal(b.err)
		}
	}
	first, rebuilt := builds[0], builds[2]
	if builds[1].sum != first.sum {
		t.Errorf("two builds of commit %s as shipped (SOURCE_DATE_EPOCH) give sha256 %s and %s: want one", commit[:12], first.sum, builds[1].sum)
	}
	if rebuilt.sum == first.sum {
		t.Fatalf("the build without SOURCE_DATE_EPOCH a day later gives the first build's bytes (%s): the test shows nothing", first.sum)
	}

	// The ci job of github-actions.yml for each build's artifact in turn.
	ciWF := readShipped(t, "github-actions.yml")
	ci := ciWF.Jobs["ci"]
	runLine := regexp.MustCompile(`(?m)^run (\S+?):? (\d+ jobs? submitted|already submitted)`)
	for _, sc := range []struct {
		name, headRepo, headBranch, user, stream, prefix string
	}{
		{"producer", "acme/fleetdemo", "feature-x", "producer", protocol.StreamJobs, "ci-fleetdemo-" + commit[:12] + "-"},
		{"fork", "mallory/fleetdemo", "main", "untrusted", protocol.StreamUntrusted, "untrusted-pr7-" + commit[:12] + "-"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			values := map[string]string{
				"vars.BENCHFLEET_REF": "0123456789abcdef0123456789abcdef01234567", "vars.BENCHFLEET_NATS_URL": srv.ClientURL(),
				"vars.BENCHFLEET_NATS_CA": "", "vars.BENCHFLEET_STORE": "file://" + storeDir,
				"secrets.BENCHFLEET_NATS_PASSWORD": passwords["producer"], "secrets.BENCHFLEET_UNTRUSTED_NATS_PASSWORD": passwords["untrusted"],
				"secrets.BENCHFLEET_AWS_ACCESS_KEY_ID": "", "secrets.BENCHFLEET_AWS_SECRET_ACCESS_KEY": "", "secrets.BENCHFLEET_NOTIFY_URL": "",
				"github.token": "", "github.repository": "acme/fleetdemo", "github.event.workflow_run.head_sha": commit,
				"github.event.workflow_run.head_repository.full_name": sc.headRepo, "github.event.workflow_run.head_branch": sc.headBranch,
			}
			// A checkout of the default branch: the matrices.
			work := t.TempDir()
			if err := os.CopyFS(filepath.Join(work, "deploy", "ci"), os.DirFS("../../../deploy/ci")); err != nil {
				t.Fatal(err)
			}
			type attempt struct {
				run, out, summary string
				code              int
			}
			submit := func(artifact string) attempt {
				runner := t.TempDir()
				if err := os.CopyFS(filepath.Join(runner, "benchfleet-build"), os.DirFS(artifact)); err != nil {
					t.Fatal(err)
				}
				base, ghEnv, summary := githubRunner(t, runner, binDir)
				var a attempt
				for _, st := range ci.Steps {
					if st.Run == "" || strings.Contains(st.Run, "go install") {
						continue
					}
					env, err := stepEnv(base, values, ciWF.Env, ci.Env, st.Env)
					if err != nil {
						t.Fatalf("ci step %q: %v", st.Name, err)
					}
					if b, err := os.ReadFile(ghEnv); err == nil {
						env = append(env, strings.Fields(string(b))...)
					}
					code, out := runStep(t, st.Name, st.Run, work, env)
					if !strings.Contains(st.Run, "benchfleet submit") {
						if code != 0 {
							t.Fatalf("ci step %q: exit %d\n%s", st.Name, code, out)
						}
						continue
					}
					m := runLine.FindStringSubmatch(out)
					if m == nil {
						t.Fatalf("ci step %q: exit %d, no run submitted or attached:\n%s", st.Name, code, out)
					}
					sum, _ := os.ReadFile(summary)
					a = attempt{run: m[1], out: out, summary: string(sum), code: code}
				}
				if a.run == "" {
					t.Fatal("github-actions.yml job ci has no step that runs benchfleet submit")
				}
				return a
			}
			one := submit(first.artifact)
			if !strings.HasPrefix(one.run, sc.prefix) || !strings.Contains(one.out, "jobs submitted") {
				t.Fatalf("the first run: run %s, want %s…, submitted\n%s", one.run, sc.prefix, one.out)
			}
			before := published(sc.stream)
			two := submit(rebuilt.artifact)
			if two.run != one.run {
				t.Fatalf("the re-run with the rebuilt wheel (sha256 %s, the first %s) submitted run %s, the first run %s: want the same run",
					rebuilt.sum, first.sum, two.run, one.run)
			}
			if !strings.Contains(two.out, "re-attaching, nothing new published") || two.code != one.code {
				t.Errorf("the re-run: exit %d (the first %d), want it re-attached:\n%s", two.code, one.code, two.out)
			}
			if after := published(sc.stream); after != before {
				t.Errorf("the re-run published %d messages to %s, want none", after-before, sc.stream)
			}
			warn := first.sum + " in the run, " + rebuilt.sum + " now"
			for where, text := range map[string]string{"output": two.out, "step summary": two.summary} {
				if !strings.Contains(text, warn) || !strings.Contains(text, "measures the build it was first submitted with") {
					t.Errorf("the re-run's %s does not say the run measures its first build (%q):\n%s", where, warn, text)
				}
			}
			var mf protocol.RunManifest
			data, err := os.ReadFile(filepath.Join(storeDir, storage.ManifestKey(one.run)))
			if err == nil {
				err = json.Unmarshal(data, &mf)
			}
			if err != nil || len(mf.Source.Wheels) != 1 || mf.Source.Wheels[0].SHA256 != first.sum {
				t.Errorf("run %s's manifest: wheels %+v (%v), want the first build's %s", one.run, mf.Source.Wheels, err, first.sum)
			}
			t.Logf("run %s: first build %s, re-run's build %s, re-attached (exit %d)", one.run, first.sum[:12], rebuilt.sum[:12], two.code)
		})
	}
}
