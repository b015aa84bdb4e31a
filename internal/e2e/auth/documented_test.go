package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// whoRunsWhat reads deploy/nats/README.md's table "Who runs which
// command": each command (in backquotes) and the users named for it.
func whoRunsWhat(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.Contains(line, "Who runs which command")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("deploy/nats/README.md: a row without users: %s", line)
		}
		var users []string
		for _, w := range regexp.MustCompile(`[a-z]+`).FindAllString(cells[2], -1) {
			if _, ok := passwords[w]; ok && !slices.Contains(users, w) {
				users = append(users, w)
			}
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = users
		}
	}
	if len(out) == 0 {
		t.Fatal(`deploy/nats/README.md has no table under "Who runs which command"`)
	}
	return out
}

// Every command deploy/nats/README.md names a user for runs as that user
// on the shipped accounts.conf, through the command line, without a
// refusal. The must-show: `runs cancel` as the producer (who may not
// delete queued jobs) exits 0 saying how many queued jobs the workers will
// drop, and a worker started afterwards runs none of them; the admin's
// cancel removes them. The dashboard (`serve --actions`) as each user
// offers and takes only the actions that user may take, and says who may
// take the others.
func TestDocumentedCommandsRunAsTheirUsers(t *testing.T) {
	url := accountsServer(t)
	storeDir := t.TempDir()
	store := "file://" + storeDir
	table := whoRunsWhat(t)
	ran := map[string][]string{}
	cli := func(ctx context.Context, user string, args ...string) (int, string, string) {
		t.Setenv("NATS_PASSWORD", passwords[user])
		var out, errb bytes.Buffer
		full := append([]string{"--nats", url, "--user", user, "--store", store, "--log-level", "warn", "--log-format", "json"}, args...)
		code := cmdline.Run(ctx, &out, &errb, full...)
		return code, out.String(), errb.String()
	}
	// run runs command (the table's name of it) as user with args and
	// returns its output; a refusal or a failure fails the test.
	run := func(command, user string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		code, out, errOut := cli(ctx, user, args...)
		if code != 0 || strings.Contains(out+errOut, violation) || strings.Contains(out+errOut, "deadline exceeded") {
			t.Errorf("%s as %s: exit %d\n%s%s", strings.Join(args, " "), user, code, out, errOut)
		}
		if !slices.Contains(ran[command], user) {
			ran[command] = append(ran[command], user)
		}
		return out
	}
	sub := func(run string, pool string, labels ...string) []string {
		args := []string{"submit", "--pool", pool, "--model", map[string]string{"sim": "simnet", "cpu": "mlp"}[pool], "--batch-size", "2", "--loop-count", "4", "--run", run}
		for _, l := range labels {
			args = append(args, "--label", l)
		}
		return args
	}

	run("topology apply", "admin", "topology", "apply", "--ack-wait", "5s")
	for _, u := range []string{"producer", "untrusted", "reader", "admin"} {
		run("fleet status", u, "fleet", "status")
	}

	// Three jobs queued while no worker runs, cancelled by the producer.
	matrix := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(matrix, []byte("run: doc-cancel\ndefaults:\n  benchmark: {loop_count: 4}\n  labels: {sim.duration: 1ms}\nmatrix:\n  pool: [sim]\n  benchmark:\n    - {model: simnet}\n  batch_size: [1, 2, 4]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("submit", "producer", "submit", "--matrix", matrix); !strings.Contains(out, "3 jobs submitted") {
		t.Fatalf("submit: %s", out)
	}
	run("runs list", "producer", "runs", "list")
	run("runs list", "reader", "runs", "list")
	for _, u := range []string{"producer", "untrusted", "reader"} {
		if out := run("runs show", u, "runs", "show", "doc-cancel"); strings.Count(out, " queued") < 3 || strings.Contains(out, "unfinished") {
			t.Errorf("runs show as %s: want its 3 jobs queued, not unfinished:\n%s", u, out)
		}
	}
	out := run("runs cancel", "producer", "runs", "cancel", "doc-cancel")
	if !strings.Contains(out, "run doc-cancel cancelled: 3 jobs left queued (dropped, cancelled, when a worker claims them)") {
		t.Errorf("runs cancel as producer: want 3 jobs left queued:\n%s", out)
	}
	t.Logf("runs cancel as producer: %s", strings.TrimSpace(out))

	// A worker started afterwards, as the worker user: it drops the three
	// (never runs them) and runs the rest.
	wctx, stopW := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	var wout, werr bytes.Buffer
	t.Setenv("NATS_PASSWORD", passwords["worker"])
	go func() {
		defer close(wdone)
		if code := cmdline.Run(wctx, &wout, &werr, "--nats", url, "--user", "worker", "--store", store, "--log-level", "warn", "--log-format", "json",
			"worker", "--slots", "sim=1", "--id", "doc-worker", "--max-deliver", "1", "--work-dir", t.TempDir()); code != 0 {
			t.Errorf("worker as worker: exit %d\n%s", code, werr.String())
		}
	}()
	ran["worker"] = []string{"worker"}
	t.Cleanup(func() {
		stopW()
		<-wdone
		if strings.Contains(werr.String(), violation) {
			t.Errorf("the worker hit a permissions violation:\n%s", werr.String())
		}
	})
	_, jsR, _ := as(t, url, "reader")
	b, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Eventually(t, 60*time.Second, "the worker to drain the cancelled run's queue", func() bool {
		c, err := jsR.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && strings.Contains(run("fleet status", "reader", "fleet", "status"), "doc-worker")
	})
	// The worker took the three jobs off the queue above; none ran.
	rs := fleettest.Results(t, b, "doc-cancel")
	for _, r := range rs {
		if r.Status != protocol.StatusCancelled {
			t.Errorf("cancelled job %s ended %s, want cancelled", r.Job, r.Status)
		}
	}
	if len(rs) != 3 {
		t.Errorf("doc-cancel has %d results, want 3 cancelled", len(rs))
	}
	for _, e := range fleettest.Events(t, jsR, "doc-cancel") {
		if e.Kind == protocol.EventPhase || e.Kind == protocol.EventPassed || e.Kind == protocol.EventFailed {
			t.Errorf("a cancelled job ran: event %s of %s on %s", e.Kind, e.Job, e.Worker)
		}
	}

	// Submitting and waiting, as both producers; watching, as every reader.
	run("submit --wait", "producer", append(sub("doc-pass", "sim", "sim.duration=1ms"), "--wait", "--timeout", "60s")...)
	run("submit --wait", "untrusted", append(sub("untrusted-doc-pass", "sim", "sim.duration=1ms"), "--wait", "--timeout", "60s")...)
	run("submit", "untrusted", sub("untrusted-doc-cancel", "cpu")...)
	for _, u := range []string{"producer", "untrusted", "reader"} {
		run("runs watch", u, "runs", "watch", "doc-pass", "--timeout", "30s")
	}
	// The untrusted producer cancels its own run (left queued); the admin
	// cancels one of the producer's (removed from the queue).
	if out := run("runs cancel", "untrusted", "runs", "cancel", "untrusted-doc-cancel"); !strings.Contains(out, "1 job left queued") {
		t.Errorf("runs cancel as untrusted: %s", out)
	}
	run("submit", "producer", sub("doc-admin", "cpu")...)
	if out := run("runs cancel", "admin", "runs", "cancel", "doc-admin"); !strings.Contains(out, "1 job removed from the queue") {
		t.Errorf("runs cancel as admin: want the job removed from the queue:\n%s", out)
	}

	// A dead letter (an infrastructure failure on the only delivery), listed
	// and re-queued; its second attempt passes.
	run("submit", "producer", sub("doc-dead", "sim", "sim.fail=transient", "sim.fail_attempts=1", "sim.duration=1ms")...)
	var dead []fleet.DeadEntry
	fleettest.Eventually(t, 60*time.Second, "the dead letter", func() bool {
		return json.Unmarshal([]byte(run("dlq list", "reader", "dlq", "list", "--format", "json")), &dead) == nil && len(dead) == 1
	})
	run("dlq list", "producer", "dlq", "list")
	run("dlq list", "admin", "dlq", "list")
	run("dlq retry", "producer", "dlq", "retry", dead[0].ID)
	fleettest.Eventually(t, 60*time.Second, "the re-queued job to pass", func() bool {
		r := fleettest.Results(t, b, "doc-dead")[dead[0].ID]
		return r != nil && r.Status == protocol.StatusPassed
	})

	// A quarantined board's record (as its worker writes it), released by
	// the admin.
	_, jsW, _ := as(t, url, "worker")
	health, err := jsW.KeyValue(t.Context(), protocol.BucketHealth)
	if err != nil {
		t.Fatal(err)
	}
	quarantine := func(dev string) {
		h, _ := json.Marshal(protocol.DeviceHealth{Quarantined: true, Reason: "test: hung", Since: time.Now().UTC()})
		if _, err := health.Put(t.Context(), protocol.HealthKey("doc-worker", dev), h); err != nil {
			t.Fatal(err)
		}
	}
	quarantine("tt0")
	run("fleet release", "admin", "fleet", "release", "doc-worker", "tt0")

	// The dashboard: read-only as the reader; with actions as the producer
	// and the admin, each offering and taking only what it may.
	const token = "0123456789abcdef0123456789abcdef-doc"
	t.Setenv("BENCHFLEET_ACTIONS_TOKEN", token)
	serve := func(command, user string, args ...string) string {
		addr := fmt.Sprintf("127.0.0.1:%d", fleettest.FreePort(t))
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		var errb bytes.Buffer
		t.Setenv("NATS_PASSWORD", passwords[user])
		go func() {
			defer close(done)
			var out bytes.Buffer
			if code := cmdline.Run(ctx, &out, &errb, append([]string{"--nats", url, "--user", user, "--store", store, "--log-level", "warn",
				"serve", "--listen", addr}, args...)...); code != 0 {
				t.Errorf("%s as %s: exit %d\n%s%s", command, user, code, out.String(), errb.String())
			}
		}()
		t.Cleanup(func() { stop(); <-done })
		base := "http://" + addr
		fleettest.Eventually(t, 30*time.Second, command+" as "+user+" to answer", func() bool {
			resp, err := http.Get(base + "/")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == http.StatusOK
		})
		if !slices.Contains(ran[command], user) {
			ran[command] = append(ran[command], user)
		}
		return base
	}
	page := func(base, path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		return body.String()
	}
	act := func(base, path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(""))
		req.Header.Set("Authorization", "Bearer "+token)
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := neturl.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc == nil {
			t.Fatalf("POST %s: %s, want a redirect with the outcome", path, resp.Status)
		}
		return loc.Query().Get("flash")
	}
	reader := serve("serve", "reader")
	if p := page(reader, "/"); !strings.Contains(p, "read-only") {
		t.Errorf("serve as reader: not read-only")
	}
	prod := serve("serve --actions", "producer", "--actions")
	admin := serve("serve --actions", "admin", "--actions")

	// Cancel: both may; the producer's leaves the job queued, the admin's
	// removes it.
	run("submit", "producer", sub("doc-ui-p", "cpu")...)
	run("submit", "producer", sub("doc-ui-a", "cpu")...)
	for _, c := range []struct{ base, user, run, want string }{{prod, "producer", "doc-ui-p", "1 job left queued"}, {admin, "admin", "doc-ui-a", "1 job removed from the queue"}} {
		if p := page(c.base, "/runs/"+c.run); !strings.Contains(p, `id="cancel"`) {
			t.Errorf("dashboard as %s: no cancel button on a running run", c.user)
		}
		if f := act(c.base, "/runs/"+c.run+"/cancel"); !strings.Contains(f, "run "+c.run+" cancelled: "+c.want) {
			t.Errorf("dashboard cancel as %s: %q, want %q", c.user, f, c.want)
		}
		if p := page(c.base, "/runs/"+c.run); !strings.Contains(p, `id="run-state">cancelled<`) {
			t.Errorf("dashboard as %s: run %s not shown cancelled after the cancel:\n%s", c.user, c.run, regexp.MustCompile(`<p class="progress">[^\n]*\n[^\n]*`).FindString(p))
		}
	}
	// Release: the admin's only.
	quarantine("tt1")
	if f := act(prod, "/fleet/doc-worker/tt1/release"); !strings.Contains(f, "failed: releasing a board needs the admin's NATS credentials") || !strings.Contains(f, "NATS user producer") {
		t.Errorf("dashboard release as producer: %q, want a refusal naming who may", f)
	}
	if f := act(admin, "/fleet/doc-worker/tt1/release"); !strings.Contains(f, "board tt1 of doc-worker released") {
		t.Errorf("dashboard release as admin: %q", f)
	}
	// Dead letters: a retryable one and an invalid one. The producer
	// offers a retry of the first only; the admin of neither, saying who
	// may.
	run("submit", "producer", sub("doc-dead2", "sim", "sim.fail=transient", "sim.fail_attempts=1", "sim.duration=1ms")...)
	run("submit", "producer", sub("doc-invalid", "sim", "sim.fail=permanent")...)
	fleettest.Eventually(t, 60*time.Second, "the two dead letters", func() bool {
		return json.Unmarshal([]byte(run("dlq list", "reader", "dlq", "list", "--format", "json")), &dead) == nil && len(dead) == 2
	})
	p := page(prod, "/dlq")
	if n := strings.Count(p, `action="/dlq/`); n != 1 || !strings.Contains(p, "an invalid job") {
		t.Errorf("dashboard dead letters as producer: %d retry buttons, want 1 (not on the invalid job, which says why)", n)
	}
	p = page(admin, "/dlq")
	if strings.Contains(p, `action="/dlq/`) || !strings.Contains(p, "needs a producer") {
		t.Errorf("dashboard dead letters as admin: offers a retry, or does not say who may:\n%s", p)
	}
	for _, d := range dead {
		if !strings.HasPrefix(d.Reason, fleet.InvalidReasonPrefix) {
			if f := act(prod, "/dlq/"+d.ID+"/retry"); !strings.Contains(f, "re-queued") {
				t.Errorf("dashboard retry as producer: %q", f)
			}
		}
	}

	// Every documented command ran as every user the docs name, and no
	// other way.
	for command, users := range table {
		for _, u := range users {
			if !slices.Contains(ran[command], u) {
				t.Errorf("deploy/nats/README.md names %s for %q, which this test did not run as that user", u, command)
			}
		}
	}
	for command, users := range ran {
		for _, u := range users {
			if !slices.Contains(table[command], u) {
				t.Errorf("the test ran %q as %s, which deploy/nats/README.md does not name", command, u)
			}
		}
	}
}
