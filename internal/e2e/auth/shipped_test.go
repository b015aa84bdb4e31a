package auth

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

// passwordEnv are the variables accounts.conf reads its passwords from
// (the EnvironmentFile of nats-server@.service), by user.
var passwordEnv = map[string]string{
	"BENCH_PRODUCER_PASSWORD": "producer", "BENCH_UNTRUSTED_PASSWORD": "untrusted", "BENCH_WORKER_PASSWORD": "worker", "BENCH_READER_PASSWORD": "reader",
	"BENCH_ADMIN_PASSWORD": "admin", "NATS_SYS_PASSWORD": "sys",
}

// startSingle runs deploy/nats/single.conf with the shipped accounts.conf
// on 127.0.0.1 (the passwords in the environment, as the README says),
// with only the monitoring port moved to a free one and extra appended
// (e.g. a tls block). The test must not be parallel (t.Setenv).
func startSingle(t *testing.T, extra string) *server.Server {
	t.Helper()
	for env, user := range passwordEnv {
		t.Setenv(env, passwords[user])
	}
	dir := t.TempDir()
	for name, rw := range map[string][][2]string{
		"single.conf":   {{"http: 127.0.0.1:8222", fmt.Sprintf("http: 127.0.0.1:%d", fleettest.FreePort(t))}},
		"accounts.conf": nil,
	} {
		data, err := os.ReadFile(filepath.Join(deployDir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		for _, r := range rw {
			if !strings.Contains(s, r[0]) {
				t.Fatalf("deploy/nats/%s no longer contains %q: update the test with the config", name, r[0])
			}
			s = strings.ReplaceAll(s, r[0], r[1])
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "test.conf")
	if err := os.WriteFile(conf, []byte("include ./single.conf\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "js"), Name: "nats-single", ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// makeCerts runs deploy/nats/make-certs.sh into a temp dir with names as
// the extra SANs and returns the dir.
func makeCerts(t *testing.T, names ...string) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("deploy/nats/make-certs.sh needs openssl (apt-get install openssl)")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", append([]string{filepath.Join(deployDir, "make-certs.sh"), out}, names...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make-certs.sh: %v\n%s", err, b)
	}
	return out
}

// binEnv is a clean environment for the benchfleet binary.
// githubRunner is the environment of a GitHub Actions step on the runner
// whose temporary directory is runner, with binDir (benchfleet) first on
// PATH; ghEnv and summary are its GITHUB_ENV and GITHUB_STEP_SUMMARY
// files, created empty. A workflow_run runs on the default branch:
// GITHUB_SHA is its head, not the commit benchmarked.
func githubRunner(t *testing.T, runner, binDir string) (base []string, ghEnv, summary string) {
	t.Helper()
	ghEnv, summary = filepath.Join(runner, "github_env"), filepath.Join(runner, "step_summary.md")
	for _, f := range []string{ghEnv, summary} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base = binEnv("PATH="+binDir+":"+os.Getenv("PATH"), "RUNNER_TEMP="+runner, "GITHUB_ENV="+ghEnv, "GITHUB_STEP_SUMMARY="+summary,
		"GITHUB_SHA=89abcdef0123456789abcdef0123456789abcdef", "GITHUB_REF_NAME=main", "GITHUB_REPOSITORY=acme/fleetdemo",
		"GITHUB_RUN_ID=4242", "BENCHFLEET_STATE_DIR="+t.TempDir())
	return base, ghEnv, summary
}

func binEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "AWS_EC2_METADATA_DISABLED=true"}, extra...)
}

// lockedBuffer is a bytes.Buffer for a process's output read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// deploy/nats/single.conf as shipped: the admin applies the topology, a
// worker (its own user) serves a sim slot, the producer submits and waits,
// all with the passwords from NATS_PASSWORD and no path edited.
func TestSingleNodeConfigAsShipped(t *testing.T) {
	s := startSingle(t, "")
	bin := clitest.Binary(t)
	url := s.ClientURL()
	store := "file://" + t.TempDir()
	as := func(user string) []string {
		return binEnv("NATS_URL="+url, "NATS_USER="+user, "NATS_PASSWORD="+passwords[user], "NATS_INBOX_PREFIX=_INBOX_"+user,
			"BENCHFLEET_STORE="+store, "BENCHFLEET_STATE_DIR="+t.TempDir())
	}
	apply := exec.Command(bin, "topology", "apply")
	apply.Env = as("admin")
	if out, err := apply.CombinedOutput(); err != nil || !strings.Contains(string(out), "topology applied") {
		t.Fatalf("topology apply as admin: %v\n%s", err, out)
	}
	var wout lockedBuffer
	w := exec.Command(bin, "worker", "--slots", "sim=1", "--id", "single-worker", "--log-level", "warn")
	w.Env, w.Stdout, w.Stderr, w.WaitDelay = as("worker"), &wout, &wout, 5*time.Second
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
	})
	sub := exec.Command(bin, "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "2", "--loop-count", "4",
		"--run", "single-1", "--wait", "--timeout", "60s")
	sub.Env = as("producer")
	out, err := sub.CombinedOutput()
	if err != nil || strings.Contains(string(out), violation) {
		t.Fatalf("submit --wait as producer: %v\n%s\nworker:\n%s", err, out, wout.String())
	}
	if strings.Contains(wout.String(), violation) {
		t.Fatalf("the worker hit a permissions violation:\n%s", wout.String())
	}
	// The wrong password names the user and the variable.
	bad := exec.Command(bin, "runs", "list")
	bad.Env = append(as("reader"), "NATS_PASSWORD=")
	out, err = bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `user "reader" has no password`) || !strings.Contains(string(out), "NATS_PASSWORD_FILE") {
		t.Errorf("reader without a password: %v\n%s", err, out)
	}
}

// make-certs.sh's certificates run the shipped three-node TLS cluster
// (mutual TLS on the routes, each node its own certificate) and verify
// for clients that give --tls-ca the script's ca.pem.
func TestMakeCertsRunsTheTLSCluster(t *testing.T) {
	t.Parallel()
	certs := makeCerts(t, "127.0.0.1")
	wkp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	wpub, _ := wkp.PublicKey()
	routePorts := []int{fleettest.FreePort(t), fleettest.FreePort(t), fleettest.FreePort(t)}
	var urls []string
	for i := 1; i <= 3; i++ {
		node := filepath.Join(certs, fmt.Sprintf("nats-%d", i))
		p := &pki{ca: filepath.Join(node, "ca.pem"), serverCert: filepath.Join(node, "server.pem"), serverKey: filepath.Join(node, "server-key.pem")}
		conf := renderDeploy(t, i, p, routePorts, wpub)
		s, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats"), Name: fmt.Sprintf("nats-%d", i), ConfigFile: conf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		urls = append(urls, s.ClientURL())
	}
	ca := filepath.Join(certs, "ca.pem")
	_, js, _ := connectAs(t, natsconn.Options{URL: strings.Join(urls, ","), User: "admin", Password: passwords["admin"], TLSCA: ca, InboxPrefix: "_INBOX_admin"})
	var h *topology.Handles
	deadline := time.Now().Add(40 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		h, err = topology.Apply(ctx, js, topology.Config{Replicas: 3})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apply with replicas 3 on the cluster of make-certs.sh's certificates: %v", err)
		}
	}
	info, err := h.Jobs.Info(t.Context())
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("BENCH_JOBS over the routes: %+v %v, want a leader and 2 replicas", info, err)
	}
	// Without the CA the client is told which flag gives it.
	_, err = natsconn.Connect(t.Context(), natsconn.Options{URL: urls[0], User: "reader", Password: passwords["reader"], ConnectTimeout: time.Hour}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "--tls-ca") || !strings.Contains(err.Error(), "NATS_TLS_CA") {
		t.Errorf("no CA: %v", err)
	}
}

// workflow is what the test reads of deploy/ci/github-actions.yml.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// evalExpr evaluates a GitHub Actions expression of the forms the
// workflow uses — `a || b`, `a && b`, `x == y`, `x != y`, 'literal' and
// context names looked up in values — as GitHub does (&& and || give an
// operand; "" and false are falsy). missing is a name values lacks.
func evalExpr(e string, values map[string]string) (v, missing string) {
	truthy := func(v string) bool { return v != "" && v != "false" }
	term := func(t string) (string, string) {
		t = strings.TrimSpace(t)
		if strings.HasPrefix(t, "'") && strings.HasSuffix(t, "'") && len(t) >= 2 {
			return t[1 : len(t)-1], ""
		}
		for _, op := range []string{"==", "!="} {
			if l, r, ok := strings.Cut(t, " "+op+" "); ok {
				lv, m1 := evalExpr(l, values)
				rv, m2 := evalExpr(r, values)
				return fmt.Sprint((lv == rv) == (op == "==")), m1 + m2
			}
		}
		v, ok := values[t]
		if !ok {
			return "", t
		}
		return v, ""
	}
	if !strings.Contains(e, "||") && !strings.Contains(e, "&&") {
		if v, ok := values[strings.TrimSpace(e)]; ok {
			return v, ""
		}
		return term(e)
	}
	for _, alt := range strings.Split(e, "||") {
		var v string
		for _, conj := range strings.Split(alt, "&&") {
			var m string
			if v, m = term(conj); m != "" {
				return "", m
			}
			if !truthy(v) {
				break
			}
		}
		if truthy(v) {
			return v, ""
		}
	}
	return "", ""
}

// The shipped CI workflow (deploy/ci/github-actions.yml), its `ci` job
// (as the workflow_run of a build of this repository's commit, and of a
// fork's pull request) and its `nightly` job, against deploy/nats as
// shipped on 127.0.0.1: single.conf and accounts.conf, with TLS from
// make-certs.sh. Every step that runs benchfleet or sets the environment
// runs as GitHub would run it (bash -e, GITHUB_ENV, RUNNER_TEMP, the
// workflow's env with its expressions, variables and secrets filled in),
// with the built binary as the installed benchfleet and the build's
// artifact where the download step puts it: the producer (or, for the
// fork, the untrusted user) authenticates with the password the workflow
// puts in NATS_PASSWORD and the CA it puts in NATS_TLS_CA, submits, waits
// and writes its reports. The farm's worker here (deploy/nats's worker
// user) has no boards: it ends every job invalid, so each step exits 1
// with every job in its reports.
func TestShippedCIWorkflowOnShippedNATS(t *testing.T) {
	certs := makeCerts(t, "127.0.0.1")
	node := filepath.Join(certs, "nats-1")
	srv := startSingle(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q }\n", filepath.Join(node, "server.pem"), filepath.Join(node, "server-key.pem")))
	ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	bin := clitest.Binary(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "benchfleet")); err != nil {
		t.Fatal(err)
	}
	// The operator's step after installing deploy/nats (its README): the
	// admin applies the topology; producers may not create job consumers.
	apply := exec.Command(bin, "topology", "apply", "--tls-ca", filepath.Join(certs, "ca.pem"))
	apply.Env = binEnv("NATS_URL="+srv.ClientURL(), "NATS_USER=admin", "NATS_PASSWORD="+passwords["admin"], "NATS_INBOX_PREFIX=_INBOX_admin")
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("topology apply as admin: %v\n%s", err, out)
	}

	data, err := os.ReadFile("../../../deploy/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	storeDir := t.TempDir()
	store := "file://" + storeDir
	startFarmWorker(t, srv.ClientURL(), filepath.Join(certs, "ca.pem"), storeDir)
	const headSHA = "fedcba9876543210fedcba9876543210fedcba98"
	common := map[string]string{
		"vars.BENCHFLEET_REF":                        "0123456789abcdef0123456789abcdef01234567",
		"vars.BENCHFLEET_NATS_URL":                   srv.ClientURL(),
		"vars.BENCHFLEET_NATS_CA":                    string(ca),
		"vars.BENCHFLEET_STORE":                      store,
		"secrets.BENCHFLEET_NATS_PASSWORD":           passwords["producer"],
		"secrets.BENCHFLEET_UNTRUSTED_NATS_PASSWORD": passwords["untrusted"],
		"secrets.BENCHFLEET_AWS_ACCESS_KEY_ID":       "",
		"secrets.BENCHFLEET_AWS_SECRET_ACCESS_KEY":   "",
		"secrets.BENCHFLEET_NOTIFY_URL":              "",
		"github.token":                               "",
		"github.repository":                          "acme/fleetdemo",
		"github.event.workflow_run.head_sha":         headSHA,
	}
	type scenario struct {
		name, job, headRepo, headBranch string
		// user submits; run is the run id's prefix; priority and branch
		// are the run's.
		user, run, priority, branch string
	}
	for _, sc := range []scenario{
		{name: "ci", job: "ci", headRepo: "acme/fleetdemo", headBranch: "feature-x", user: "producer", run: "ci-fleetdemo-" + headSHA[:12], priority: "high", branch: "feature-x"},
		// A fork's pull request from its branch "main": the untrusted
		// user, normal priority, and a branch that is not this
		// repository's main.
		{name: "ci-fork", job: "ci", headRepo: "mallory/fleetdemo", headBranch: "main", user: "untrusted", run: "untrusted-pr7-" + headSHA[:12] + "-", priority: "normal", branch: "mallory/fleetdemo:main"},
		{name: "nightly", job: "nightly", user: "producer", run: "nightly-", priority: "low"},
	} {
		job, ok := wf.Jobs[sc.job]
		if !ok {
			t.Fatalf("github-actions.yml has no job %q", sc.job)
		}
		values := map[string]string{
			"github.event.workflow_run.head_repository.full_name": sc.headRepo,
			"github.event.workflow_run.head_branch":               sc.headBranch,
		}
		for k, v := range common {
			values[k] = v
		}
		fill := func(t *testing.T, where, s string) string {
			return expr.ReplaceAllStringFunc(s, func(m string) string {
				v, missing := evalExpr(expr.FindStringSubmatch(m)[1], values)
				if missing != "" {
					t.Fatalf("%s: the workflow uses ${{ %s }}, which this test does not know: add it to the test", where, missing)
				}
				return v
			})
		}
		t.Run(sc.name, func(t *testing.T) {
			// A checkout of the repository under test's default branch:
			// the matrices where the README says to copy them.
			work := t.TempDir()
			for _, m := range []string{"matrix-ci.yaml", "matrix-nightly.yaml"} {
				b, err := os.ReadFile(filepath.Join("../../../deploy/ci", m))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(work, "deploy/ci"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, "deploy/ci", m), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runner := t.TempDir()
			// The build's artifact, where the download step puts it: the
			// wheel, the commit and the pull request number (a fork may
			// write anything there: only digits are taken).
			build := filepath.Join(runner, "benchfleet-build")
			writeWheel(t, filepath.Join(build, "wheels", "fleetdemo-0.1.0-py3-none-any.whl"))
			for f, v := range map[string]string{"head-sha": headSHA + "\n", "pr-number": "7$(touch pwned)\n"} {
				if err := os.WriteFile(filepath.Join(build, f), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			base, ghEnv, summary := githubRunner(t, runner, binDir)
			ran := 0
			for _, st := range job.Steps {
				where := fmt.Sprintf("jobs.%s step %q", sc.job, st.Name)
				switch {
				case st.Uses != "" || st.Run == "":
					continue
				case strings.Contains(st.Run, "go install"):
					// Installing: the binary is on PATH. The version is the
					// user's variable, not a tag pinned in the file.
					if !strings.Contains(st.Run, "github.com/benchfleet/benchfleet/cmd/benchfleet@${BENCHFLEET_REF") {
						t.Errorf("%s installs %q, want github.com/benchfleet/benchfleet/cmd/benchfleet@${BENCHFLEET_REF…}", where, st.Run)
					}
					continue
				case !strings.Contains(st.Run, "benchfleet ") && !strings.Contains(st.Run, "GITHUB_ENV"):
					t.Logf("%s: not a benchfleet step, skipped", where)
					continue
				}
				env := append([]string{}, base...)
				for _, m := range []map[string]string{wf.Env, job.Env, st.Env} {
					for k, v := range m {
						env = append(env, k+"="+fill(t, where, v))
					}
				}
				// What earlier steps put in GITHUB_ENV.
				b, err := os.ReadFile(ghEnv)
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, strings.Fields(string(b))...)
				ran++
				if !strings.Contains(st.Run, "benchfleet submit") {
					cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", st.Run)
					cmd.Dir, cmd.Env = work, env
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s: %v\n%s", where, err, out)
					}
					continue
				}
				if u := lookup(env, "NATS_USER"); u != sc.user || lookup(env, "NATS_INBOX_PREFIX") != "_INBOX_"+sc.user || lookup(env, "NATS_PASSWORD") != passwords[sc.user] {
					t.Errorf("%s submits as %q with inbox prefix %q, want %s with its password", where, u, lookup(env, "NATS_INBOX_PREFIX"), sc.user)
				}
				code, out := runStep(t, where, st.Run, work, env)
				if strings.Contains(out, violation) || strings.Contains(out, "Authorization Violation") || strings.Contains(out, "x509") {
					t.Errorf("%s: the %s user was refused:\n%s", where, sc.user, out)
				}
				m := regexp.MustCompile(`(?m)^run (\S+): (\d+) jobs? submitted`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("%s: exit %d, no run submitted:\n%s", where, code, out)
				}
				run, jobs := m[1], m[2]
				if !strings.HasPrefix(run, sc.run) {
					t.Errorf("%s: run %s, want %s…", where, run, sc.run)
				}
				// Every job ended invalid on the farm's worker (a failure):
				// exit 1, and the reports hold every job.
				if code != 1 {
					t.Errorf("%s: exit %d, want 1 (every job failed)\n%s", where, code, out)
				}
				if sum, _ := os.ReadFile(summary); !strings.Contains(string(sum), run) {
					t.Errorf("%s: the step summary does not name run %s:\n%s", where, run, sum)
				}
				junit, err := os.ReadFile(filepath.Join(runner, "benchfleet-junit.xml"))
				if n := strings.Count(string(junit), "<testcase "); err != nil || fmt.Sprint(n) != jobs {
					t.Errorf("%s: JUnit report with %d test cases (%v), want %s", where, n, err, jobs)
				}
				// What the producer wrote in the store: the run's manifest
				// (runs/) and, for a job that sends its wheels, builds/.
				manifest, err := os.ReadFile(filepath.Join(storeDir, storage.ManifestKey(run)))
				if err != nil {
					t.Errorf("%s: no manifest in the store: %v", where, err)
				}
				var mf protocol.RunManifest
				if err := json.Unmarshal(manifest, &mf); err != nil {
					t.Errorf("%s: manifest of run %s: %v", where, run, err)
				} else {
					if string(mf.Priority) != sc.priority {
						t.Errorf("%s: run %s at priority %q, want %s", where, run, mf.Priority, sc.priority)
					}
					if sc.branch != "" && (mf.Source.Branch != sc.branch || mf.Source.Commit != headSHA) {
						t.Errorf("%s: run %s of %s@%s, want %s@%s (the commit built, not the default branch's)", where, run, mf.Source.Branch, mf.Source.Commit, sc.branch, headSHA)
					}
				}
				if strings.Contains(st.Run, "--build-wheel") {
					if keys, _ := filepath.Glob(filepath.Join(storeDir, "builds", "sha256", "*", "*.whl")); len(keys) == 0 {
						t.Errorf("%s: --build-wheel stored no wheel under builds/", where)
					}
				}
				if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
					t.Errorf("%s ran what the artifact's pr-number holds", where)
				}
				t.Logf("%s: run %s, %s jobs, exit %d", where, run, jobs, code)
			}
			b, _ := os.ReadFile(ghEnv)
			if !strings.Contains(string(b), "NATS_TLS_CA=") {
				t.Errorf("the workflow's steps set no NATS_TLS_CA: GITHUB_ENV holds\n%s", b)
			}
			if ran < 2 {
				t.Errorf("ran %d benchfleet steps of job %s, want the CA step and the submit step", ran, sc.job)
			}
		})
	}
}

// lookup is the last value of k in env (as exec does).
func lookup(env []string, k string) string {
	v := ""
	for _, e := range env {
		if name, val, ok := strings.Cut(e, "="); ok && name == k {
			v = val
		}
	}
	return v
}

// runStep runs a workflow step's script as GitHub does and returns its
// exit code and output; a step still running after two minutes fails the
// test.
func runStep(t *testing.T, where, script, dir string, env []string) (int, string) {
	t.Helper()
	var out lockedBuffer
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = dir, env, &out, &out, 5*time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running after 2 minutes:\n%s", where, out.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String()
}

// startFarmWorker runs a worker as deploy/nats's worker user with one slot
// for each Tenstorrent pool the workflow's matrices use. Its runner is the
// sim runner, so it ends each job (forge's) as invalid: a real end for
// every job, with no board here.
func startFarmWorker(t *testing.T, url, ca, storeDir string) {
	t.Helper()
	log := &logBuffer{}
	nc, err := natsconn.Connect(t.Context(), natsconn.Options{URL: url, User: "worker", Password: passwords["worker"], TLSCA: ca,
		InboxPrefix: "_INBOX_worker", ConnectTimeout: 10 * time.Second}, zerolog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	var slots []worker.Slot
	for _, pool := range []string{"n150", "n300", "p150", "p300"} {
		slots = append(slots, worker.Slot{Device: device.Device{ID: "farm-" + pool, Pool: pool, Runner: protocol.RunnerForge, Chips: 1, Healthy: true}, Runner: sim.New()})
	}
	w, err := worker.New(worker.Config{ID: "farm-worker", Conn: nc, Store: store, Slots: slots, IdlePoll: 100 * time.Millisecond,
		WorkDir: t.TempDir(), Log: zerolog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		t.Fatalf("worker start: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		<-w.Done()
		if strings.Contains(log.String(), violation) {
			t.Errorf("the worker hit a permissions violation:\n%s", log.String())
		}
	})
}

// writeWheel writes a minimal wheel (a zip archive) at path.
func writeWheel(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	w, err := z.Create("fleetdemo/__init__.py")
	if err == nil {
		_, err = w.Write([]byte("VERSION = \"0.1.0\"\n"))
	}
	if err == nil {
		err = z.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
