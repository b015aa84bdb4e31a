package cli

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/worker/configfile"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// recorder is an httptest server that keeps every request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	path, auth string
	body       []byte
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{path: req.URL.Path, auth: req.Header.Get("Authorization"), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) got() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// `results gate --run R --notify URL` on a planted regression posts one
// JSON body whose text names the regressed model and the run, and not the
// series that did not regress; a second identical call posts nothing (the
// dedup record in the store). With --github-token the run's commit gets a
// failure status on the API base given, on every call.
func TestGateNotifyOnceAndCommitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	plantHistory(t, store, "hist", "simnet-a", "main", 1000, noise1pct, protocol.StatusPassed)
	plantHistory(t, store, "histb", "simnet-b", "main", 1000, noise1pct, protocol.StatusPassed)
	const (
		run    = "pr-42"
		sha    = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
		ciLink = "https://github.com/acme/bench/actions/runs/77"
	)
	now := time.Now().UTC()
	for _, c := range []struct {
		model string
		sps   float64
	}{{"simnet-a", 850}, {"simnet-b", 1001}} {
		r := &protocol.Result{Schema: protocol.SchemaResult, Job: protocol.JobID(run, c.model), Run: run, RunCreatedAt: now,
			Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: 1, StartedAt: now, FinishedAt: now,
			Benchmark:    protocol.Benchmark{Model: c.model, BatchSize: 4, LoopCount: 20, WarmupCount: 20, DataFormat: "bfloat16"},
			Source:       protocol.Source{Repo: "acme/bench", Commit: sha, Branch: "feature-x", CIRunURL: ciLink},
			Measurements: protocol.Measurements{SamplesPerSec: c.sps},
			PCC:          protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
		if _, err := storage.PutResult(t.Context(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	hook, gh := newRecorder(t), newRecorder(t)
	args := []string{"results", "gate", "--run", run, "--store", "file://" + dir, "--notify", hook.URL + "/hooks/T0/B0/secret",
		"--github-token", "test-token", "--github-api", gh.URL, "--commit", sha, "--repo", "acme/bench"}

	code, out, errOut := ciRun(t, args...)
	if code != ExitGate {
		t.Fatalf("gate: exit %d, want %d\n%s%s", code, ExitGate, out, errOut)
	}
	posts := hook.got()
	if len(posts) != 1 {
		t.Fatalf("%d webhook posts, want 1\n%s", len(posts), errOut)
	}
	var m protocol.Notification
	if err := json.Unmarshal(posts[0].body, &m); err != nil {
		t.Fatalf("webhook body is not JSON: %v\n%s", err, posts[0].body)
	}
	t.Logf("text: %s", m.Text)
	if !strings.Contains(m.Text, "simnet-a") || !strings.Contains(m.Text, run) || strings.Contains(m.Text, "simnet-b") {
		t.Errorf("text must name simnet-a and %s and not simnet-b:\n%s", run, m.Text)
	}
	if !strings.Contains(m.Text, "-15.") || !strings.Contains(m.Text, ciLink) || !strings.Contains(m.Text, "c0ffee00c0ff") {
		t.Errorf("text must say by how much (-15%%), the commit and the link:\n%s", m.Text)
	}
	if m.Event != protocol.NotifyRegression || m.Run != run || m.Commit != sha || m.Link != ciLink || m.Outcome != "REGRESSION" ||
		len(m.Series) != 1 || m.Series[0].Model != "simnet-a" || m.Series[0].Verdict != "regression" ||
		m.Series[0].Change == nil || math.Abs(*m.Series[0].Change+0.15) > 0.01 {
		t.Errorf("structured fields: %+v", m)
	}
	checkStatus := func(n int) {
		t.Helper()
		sts := gh.got()
		if len(sts) != n {
			t.Fatalf("%d commit statuses, want %d\n%s", len(sts), n, errOut)
		}
		s := sts[n-1]
		var st protocol.CommitStatus
		if err := json.Unmarshal(s.body, &st); err != nil {
			t.Fatal(err)
		}
		if s.path != "/repos/acme/bench/statuses/"+sha || s.auth != "Bearer test-token" ||
			st.State != protocol.CommitFailure || st.Context != "benchfleet/gate" || st.TargetURL != ciLink || !strings.Contains(st.Description, run) {
			t.Errorf("commit status: %s %q %+v", s.path, s.auth, st)
		}
	}
	checkStatus(1)

	// The same regression of the same run again: nothing posted.
	code, out, errOut = ciRun(t, args...)
	if code != ExitGate {
		t.Fatalf("second gate: exit %d, want %d\n%s%s", code, ExitGate, out, errOut)
	}
	if n := len(hook.got()); n != 1 {
		t.Errorf("%d webhook posts after the second gate, want still 1", n)
	}
	if !strings.Contains(errOut, "already sent") {
		t.Errorf("stderr does not say the notification was already sent:\n%s", errOut)
	}
	checkStatus(2)
	// The dedup record is in the store.
	n := 0
	for k, err := range store.List(t.Context(), "notify/v1/") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(k, ".json") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d dedup records under notify/v1/, want 1", n)
	}
}

// submit --wait --gate --notify: the run's regression is posted once, a
// re-attached submit of the same commit posts nothing new.
func TestSubmitGateNotify(t *testing.T) {
	t.Parallel()
	f := startCIFleet(t, 2)
	plantHistory(t, f.store, "hist", "simnet-a", "main", 1000, noise1pct, protocol.StatusPassed)
	plantHistory(t, f.store, "histb", "simnet-b", "main", 900, noise1pct, protocol.StatusPassed)
	matrix := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(matrix, []byte(ciMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := newRecorder(t)
	args := f.args("submit", "--matrix", matrix, "--commit", "0123456789abcdef0123456789abcdef01234567", "--branch", "feature-n",
		"--repo", "acme/bench", "--ack-wait", ciAckWait.String(), "--wait", "--timeout", "60s", "--gate", "--notify", hook.URL)
	for i := range 2 {
		code, out, errOut := ciRun(t, args...)
		if code != ExitGate {
			t.Fatalf("submit %d: exit %d, want %d\n%s%s", i, code, ExitGate, out, errOut)
		}
	}
	posts := hook.got()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	var m protocol.Notification
	if err := json.Unmarshal(posts[0].body, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "simnet-a") || strings.Contains(m.Text, "simnet-b") || strings.Contains(m.Text, "simnet-new") ||
		!strings.Contains(m.Text, m.Run) || !strings.HasPrefix(m.Run, "ci-bench-") {
		t.Errorf("text: %s", m.Text)
	}
	// --notify without --gate is a usage error naming it.
	code, _, errOut := ciRun(t, f.args("submit", "--pool", "sim", "--model", "m", "--batch-size", "1", "--loop-count", "1",
		"--wait", "--notify", hook.URL)...)
	if code != ExitUsage || !strings.Contains(errOut, "--notify") {
		t.Errorf("--notify without --gate: exit %d %q", code, errOut)
	}
}

// The worker config takes metrics_listen and notify.url.
func TestWorkerConfigMetricsAndNotify(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "w.yaml")
	yaml := "slots:\n  - {pool: sim, runner: sim, count: 1}\nmetrics_listen: 127.0.0.1:9464\nnotify: {url: https://chat.example/hooks/x}\n"
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err := configfile.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if wf.MetricsListen != "127.0.0.1:9464" || wf.Notify.URL != "https://chat.example/hooks/x" {
		t.Errorf("%+v", wf)
	}
	if err := os.WriteFile(p, []byte("notify: {url: x, channel: y}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := configfile.Load(p); err == nil || !strings.Contains(err.Error(), "channel") {
		t.Errorf("unknown notify key: %v", err)
	}
}
