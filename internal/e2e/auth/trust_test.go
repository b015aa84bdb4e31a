package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/fleet"
)

// bin runs the real benchfleet binary as user of deploy/nats on url (its
// password in NATS_PASSWORD, the inbox _INBOX_<user> from --user), and
// returns its exit code, output and how long it ran.
func bin(t *testing.T, url, user string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clitest.Binary(t), append([]string{"--nats", url, "--user", user, "--log-format", "json", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "NATS_PASSWORD=pw-"+user, "NATS_USER=", "NATS_PASSWORD_FILE=", "NATS_INBOX_PREFIX=", "NATS_CREDS=", "NATS_NKEY=",
		"GITHUB_SHA=", "GITHUB_REF_NAME=", "GITHUB_REPOSITORY=", "GITHUB_RUN_ID=", "BENCHFLEET_STORE=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("benchfleet %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String(), took
}

// trustFleet is deploy/nats as shipped with the topology applied by the
// admin, a worker (user worker) with sim slots, and a file store.
func trustFleet(t *testing.T, slots int) (url, storeURL string, store storage.Bucket) {
	t.Helper()
	url = appliedServer(t)
	dir := t.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	startTrustWorker(t, url, store, slots)
	return url, "file://" + dir, store
}

// startTrustWorker starts a worker as the user worker with sim slots.
func startTrustWorker(t *testing.T, url string, store storage.Bucket, slots int) {
	t.Helper()
	ncW, _, logW := as(t, url, "worker")
	w, err := worker.New(worker.Config{ID: "trust-worker", Conn: ncW, Store: store, Slots: fleettest.SimSlots("trust", slots),
		AckWait: 5 * time.Second, IdlePoll: 100 * time.Millisecond, WorkDir: t.TempDir(), Log: zerolog.New(logW)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	if err := w.Start(wctx); err != nil {
		t.Fatalf("worker start: %v\n%s", err, logW.String())
	}
	t.Cleanup(func() { stop(); <-w.Done() })
}

// Finding 4: ten runs of the untrusted producer that claim --branch main
// at twice the speed stay out of main's baseline. Five trusted runs at
// 1000 samples/s make the baseline; ten untrusted ones at 2000 are judged
// against it (improved) but never enter it; the next trusted run at 1000
// passes the gate (against baseline 1000, not 2000). Every submit is the
// real binary as the users of deploy/nats/accounts.conf; the untrusted
// one's submits --wait too (its ephemeral event consumers).
func TestUntrustedRunsNeverEnterTheBaseline(t *testing.T) {
	url, storeURL, store := trustFleet(t, 2)
	submit := func(user, run, rate string, extra ...string) (int, string, string) {
		t.Helper()
		args := []string{"submit", "--store", storeURL, "--pool", "sim", "--model", "simnet", "--batch-size", "4", "--loop-count", "8",
			"--branch", "main", "--label", "sim.samples_per_sec=" + rate, "--label", "sim.duration=20ms", "--wait", "--timeout", "60s"}
		if run != "" {
			args = append(args, "--run", run)
		}
		code, out, errOut, _ := bin(t, url, user, append(args, extra...)...)
		return code, out, errOut
	}
	for i := range 5 {
		if code, out, errOut := submit("producer", fmt.Sprintf("base-%d", i), "1000"); code != 0 {
			t.Fatalf("trusted baseline run %d: exit %d\n%s%s", i, code, out, errOut)
		}
	}
	for i := range 10 {
		// Without --run: the untrusted producer's run id is derived and
		// named untrusted-<...>; its jobs go to BENCH_UNTRUSTED.
		code, out, errOut := submit("untrusted", "", "2000", "--gate")
		if code != 0 {
			t.Fatalf("untrusted run %d: exit %d\n%s%s", i, code, out, errOut)
		}
		if !strings.Contains(out, "run "+protocol.UntrustedRunPrefix) || !strings.Contains(out, "improved") || !strings.Contains(out, "untrusted") {
			t.Fatalf("untrusted run %d: want an untrusted-<...> run judged improved against the trusted baseline and marked untrusted:\n%s", i, out)
		}
	}
	code, out, errOut := submit("producer", "after-1", "1000", "--gate")
	if code != 0 {
		t.Fatalf("the trusted run after ten untrusted runs at twice the speed: exit %d (2 = the gate took them for main's baseline)\n%s%s", code, out, errOut)
	}

	// The gate's JSON: the trusted run's baseline is the trusted median;
	// an untrusted run says it is untrusted.
	var rows []gate.GateRow
	code, js, errOut, _ := bin(t, url, "producer", "results", "gate", "--store", storeURL, "--run", "after-1", "--format", "json")
	if err := json.Unmarshal([]byte(js), &rows); code != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("results gate after-1: exit %d %v\n%s%s", code, err, js, errOut)
	}
	if r := rows[0]; r.Verdict != gate.VerdictOK || r.Baseline == nil || *r.Baseline < 990 || *r.Baseline > 1010 || r.Trust != "" {
		t.Errorf("after-1's gate row: %+v (baseline %v), want ok against the trusted baseline ~1000", r, r.Baseline)
	}
	results, _, err := index.Query(t.Context(), store, index.Filter{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	untrusted := 0
	for _, r := range results {
		if r.Trust.Untrusted() != protocol.UntrustedRun(r.Run) {
			t.Errorf("result %s of run %s: trust %q", r.Job, r.Run, r.Trust)
		}
		if r.Trust.Untrusted() {
			untrusted++
			if untrusted == 1 {
				code, js, errOut, _ = bin(t, url, "producer", "results", "gate", "--store", storeURL, "--run", r.Run, "--format", "json")
				if err := json.Unmarshal([]byte(js), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].Trust != protocol.TrustUntrusted {
					t.Errorf("results gate of untrusted run %s: exit %d %v, want trust untrusted\n%s%s", r.Run, code, err, js, errOut)
				}
			}
		}
	}
	if untrusted != 10 {
		t.Errorf("%d untrusted results stored, want 10", untrusted)
	}
	code, table, errOut, _ := bin(t, url, "producer", "results", "query", "--store", storeURL, "--branch", "main")
	if code != 0 || !strings.Contains(table, "TRUST") || strings.Count(table, " untrusted") < 10 {
		t.Errorf("results query: exit %d, want a TRUST column marking 10 results untrusted\n%s%s", code, table, errOut)
	}
}

// Finding 5: the untrusted producer floods its queue with the largest
// jobs a default nats-server takes, for a pool nobody serves, until it is
// refused. The flood fills BENCH_UNTRUSTED only: a trusted submit still
// works (and runs), the producer may not purge, the admin purges the
// untrusted stream, and the untrusted producer can submit again.
func TestUntrustedFloodLeavesTrustedSubmitsWorking(t *testing.T) {
	url, storeURL, store := trustFleet(t, 1)
	ncU, jsU, _, _ := openAs(t, url, "untrusted")
	payload := bytes.Repeat([]byte("x"), int(ncU.MaxPayload()))
	flood := protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "galaxy", Priority: protocol.PriorityNormal}
	sent := 0
	var refused error
	for sent < 10_000 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := jsU.Publish(ctx, flood.Subject(), payload)
		cancel()
		if err != nil {
			refused = err
			break
		}
		sent++
	}
	if refused == nil || !strings.Contains(refused.Error(), "maximum bytes exceeded") {
		t.Fatalf("after %d jobs of %d bytes: %v, want the untrusted stream full (maximum bytes exceeded)", sent, len(payload), refused)
	}
	t.Logf("the untrusted producer's flood was refused after %d jobs of %d bytes: %v", sent, len(payload), refused)

	// A trusted submit works and its job runs.
	code, out, errOut, _ := bin(t, url, "producer", "submit", "--store", storeURL, "--pool", "sim", "--model", "simnet", "--batch-size", "4",
		"--loop-count", "8", "--run", "trusted-after-flood", "--wait", "--timeout", "60s")
	if code != 0 {
		t.Fatalf("a trusted submit after the flood: exit %d\n%s%s", code, out, errOut)
	}
	for _, r := range fleettest.Results(t, store, "trusted-after-flood") {
		if r.Status != protocol.StatusPassed || r.Trust != "" {
			t.Errorf("the trusted job after the flood: %s trust %q", r.Status, r.Trust)
		}
	}

	// Only the admin purges BENCH_UNTRUSTED.
	_, jsP, _ := as(t, url, "producer")
	if s, err := jsP.Stream(t.Context(), protocol.StreamUntrusted); err != nil {
		t.Fatal(err)
	} else if err := s.Purge(shortCtx(t)); err == nil {
		t.Error("the producer purged BENCH_UNTRUSTED")
	}
	_, jsA, _ := as(t, url, "admin")
	s, err := jsA.Stream(t.Context(), protocol.StreamUntrusted)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(t.Context()); err != nil {
		t.Fatalf("the admin's purge of %s: %v", protocol.StreamUntrusted, err)
	}
	if info, err := s.Info(t.Context()); err != nil || info.State.Msgs != 0 {
		t.Fatalf("%s after the purge: %+v %v", protocol.StreamUntrusted, info, err)
	}
	if _, err := jsU.Publish(t.Context(), flood.Subject(), []byte(`{}`)); err != nil {
		t.Errorf("the untrusted producer after the purge: %v", err)
	}
}

// A queue of BENCH_UNTRUSTED (one pool and priority) holds at most
// topology.DefaultUntrustedMaxPerQueue jobs: a flood of small jobs fills
// one queue and is refused there, and the untrusted producer's other
// queues still take jobs.
func TestUntrustedQueueLimit(t *testing.T) {
	url := appliedServer(t)
	_, jsU, topoU, _ := openAs(t, url, "untrusted")
	if n := topoU.Untrusted.CachedInfo().Config.MaxMsgsPerSubject; n <= 0 || n > 10_000 {
		t.Fatalf("%s's MaxMsgsPerSubject %d", protocol.StreamUntrusted, n)
	}
	limit := int(topoU.Untrusted.CachedInfo().Config.MaxMsgsPerSubject)
	q := protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "galaxy", Priority: protocol.PriorityLow}
	for i := range limit {
		f, err := jsU.PublishAsync(q.Subject(), []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = f
		if i%500 == 499 {
			<-jsU.PublishAsyncComplete()
		}
	}
	<-jsU.PublishAsyncComplete()
	_, err := jsU.Publish(t.Context(), q.Subject(), []byte(`{}`))
	var apiErr *jetstream.APIError
	if err == nil || !(errors.As(err, &apiErr) || strings.Contains(err.Error(), "maximum messages per subject")) {
		t.Fatalf("job %d on a full queue: %v, want it refused", limit+1, err)
	}
	other := protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "galaxy", Priority: protocol.PriorityNormal}
	if _, err := jsU.Publish(t.Context(), other.Subject(), []byte(`{}`)); err != nil {
		t.Errorf("another queue of the untrusted producer: %v", err)
	}
}

// `submit --priority high` as the untrusted user fails at once (exit 64)
// naming the rule, instead of waiting out its deadline for a publish ack
// that never comes.
func TestUntrustedHighPriorityIsAUsageError(t *testing.T) {
	url := appliedServer(t)
	code, out, errOut, took := bin(t, url, "untrusted", "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "4",
		"--loop-count", "8", "--priority", "high")
	if code != 64 {
		t.Fatalf("submit --priority high as untrusted: exit %d, want 64\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "normal or low priority only") || !strings.Contains(errOut, "--priority high") {
		t.Errorf("the message does not name the rule:\n%s", errOut)
	}
	if took > 10*time.Second {
		t.Errorf("took %s: it must fail at once", took)
	}
	// A run id the untrusted producer may not use is refused the same way.
	code, _, errOut, _ = bin(t, url, "untrusted", "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "4",
		"--loop-count", "8", "--run", "pr-9")
	if code != 64 || !strings.Contains(errOut, protocol.UntrustedRunPrefix) {
		t.Errorf("submit --run pr-9 as untrusted: exit %d, want 64 naming %s<...>\n%s", code, protocol.UntrustedRunPrefix, errOut)
	}
	// Without a priority it submits at normal (not high for a commit).
	code, out, errOut, _ = bin(t, url, "untrusted", "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "4",
		"--loop-count", "8", "--commit", strings.Repeat("ab", 20), "--repo", "fork/repo")
	if code != 0 {
		t.Fatalf("submit with a commit as untrusted: exit %d\n%s%s", code, out, errOut)
	}
	_, jsP, topoP, _ := openAs(t, url, "producer")
	_ = jsP
	if info, err := topoP.Untrusted.Info(t.Context()); err != nil || info.State.Msgs != 1 {
		t.Errorf("BENCH_UNTRUSTED after the untrusted submit: %+v %v, want its one job", info, err)
	} else if info.State.Subjects != nil {
		t.Logf("subjects %v", info.State.Subjects)
	}
	sub := protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "sim", Priority: protocol.PriorityNormal}.Subject()
	if m, err := topoP.Untrusted.GetLastMsgForSubject(t.Context(), sub); err != nil {
		t.Errorf("no job on %s: %v", sub, err)
	} else {
		var j protocol.Job
		if err := json.Unmarshal(m.Data, &j); err != nil || j.Priority != protocol.PriorityNormal || !protocol.UntrustedRun(j.Run) {
			t.Errorf("the untrusted job: priority %q run %q (%v)", j.Priority, j.Run, err)
		}
	}
}

// The worker takes a result's trust from the stream it claimed the job
// from, never from the job: a raw job the untrusted user publishes on
// main is marked untrusted and kept out of the baseline, and one that
// names another producer's run (to take its result slot) is dead-lettered
// with no result. Strict priority holds across the streams: a trusted job
// queued after an untrusted one of the same priority runs first.
func TestWorkerMarksJobsOfTheUntrustedStream(t *testing.T) {
	url := appliedServer(t)
	_, jsU, _, _ := openAs(t, url, "untrusted")
	_, jsP, topoP, _ := openAs(t, url, "producer")
	q := protocol.Queue{Trust: protocol.TrustUntrusted, Pool: "sim", Priority: protocol.PriorityNormal}
	raw := func(run string) *protocol.Job {
		t.Helper()
		j := fleettest.SimJobs(t, run, 1, map[string]string{"sim.samples_per_sec": "2000"})[0]
		j.Source.Branch, j.CreatedAt = "main", time.Now().UTC()
		_, j.ID = j.CellID()
		data, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jsU.Publish(t.Context(), q.Subject(), data); err != nil {
			t.Fatalf("the untrusted user's raw job: %v", err)
		}
		return j
	}
	squat := raw("ci-trusted-2") // a trusted run's job, pre-empted
	forged := raw(protocol.UntrustedRunPrefix + "main-7")
	trusted := fleettest.SimJobs(t, "ci-trusted-1", 1, nil)
	sub := &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}
	if _, err := sub.Submit(t.Context(), submit.Submission{Run: "ci-trusted-1", Submitter: "test", Priority: protocol.PriorityNormal, Jobs: trusted}); err != nil {
		t.Fatal(err)
	}
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	startTrustWorker(t, url, store, 1)
	var rf, rt *protocol.Result
	fleettest.Eventually(t, 30*time.Second, "both results", func() bool {
		rf, rt = fleettest.Results(t, store, forged.Run)[forged.ID], fleettest.Results(t, store, "ci-trusted-1")[trusted[0].ID]
		return rf != nil && rt != nil
	})
	if rf.Trust != protocol.TrustUntrusted || rf.Status != protocol.StatusPassed {
		t.Errorf("the job claimed from %s: %s trust %q, want passed and untrusted", protocol.StreamUntrusted, rf.Status, rf.Trust)
	}
	if rt.Trust != "" {
		t.Errorf("the trusted job: trust %q", rt.Trust)
	}
	if !rt.StartedAt.Before(rf.StartedAt) {
		t.Errorf("the trusted job started at %s, the untrusted one (queued first, same priority) at %s: want the trusted first", rt.StartedAt, rf.StartedAt)
	}
	if gate.InBaseline(rf) {
		t.Error("the untrusted job's result may enter a baseline")
	}
	var dead []fleet.DeadEntry
	fleettest.Eventually(t, 30*time.Second, "the squatting job's dead letter", func() bool {
		dead, err = fleet.ReadDead(t.Context(), jsP)
		return err == nil && len(dead) > 0
	})
	if d := dead[0]; d.ID != squat.ID || d.Letter.Trust != protocol.TrustUntrusted || !strings.Contains(d.Reason, protocol.UntrustedRunPrefix) {
		t.Errorf("dead letter %+v (trust %q), want job %s of the untrusted stream, naming the rule", d, d.Letter.Trust, squat.ID)
	}
	if r := fleettest.Results(t, store, squat.Run); len(r) != 0 {
		t.Errorf("the untrusted job of run %s left a result there: %+v", squat.Run, r)
	}
	// dlq retry (the producer's) puts it back where it came from, never
	// on BENCH_JOBS, whatever run it names.
	again, err := fleet.RetryDead(t.Context(), jsP, squat.ID)
	if err != nil || again.Queue != q {
		t.Fatalf("dlq retry of the untrusted stream's job: %+v %v, want it re-queued on %s", again, err, q.Subject())
	}
}

// `runs cancel` of its own queued run works for the untrusted user: the
// cancel flag is set, its queued job stays in BENCH_UNTRUSTED (that user
// may delete nothing) and the worker that claims it drops it with a
// cancelled result marked untrusted.
func TestUntrustedCancelsItsQueuedRun(t *testing.T) {
	url := appliedServer(t)
	const run = protocol.UntrustedRunPrefix + "cancel-1"
	code, out, errOut, _ := bin(t, url, "untrusted", "submit", "--pool", "sim", "--model", "simnet", "--batch-size", "4", "--loop-count", "8", "--run", run)
	if code != 0 {
		t.Fatalf("untrusted submit: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut, took := bin(t, url, "untrusted", "runs", "cancel", run)
	if code != 0 || !strings.Contains(out, "left queued") || took > 10*time.Second {
		t.Fatalf("untrusted runs cancel: exit %d after %s\n%s%s", code, took, out, errOut)
	}
	_, _, topoP, _ := openAs(t, url, "producer")
	if _, err := topoP.Runs.Get(t.Context(), protocol.CancelKey(run)); err != nil {
		t.Fatalf("the cancel flag: %v", err)
	}
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	startTrustWorker(t, url, store, 1)
	fleettest.Eventually(t, 30*time.Second, "the cancelled result", func() bool {
		for _, r := range fleettest.Results(t, store, run) {
			return r.Status == protocol.StatusCancelled && r.Trust == protocol.TrustUntrusted
		}
		return false
	})
}

// The untrusted user creates no durable consumer on BENCH_EVENTS: nats.go's
// named endpoint ($JS.API.CONSUMER.CREATE.BENCH_EVENTS.<name>[.<filter>])
// is denied to it, and the server refuses a durable on the legacy
// ephemeral endpoint it may use (where its waiters make their ephemeral
// consumers). The producer's ordered consumers are unchanged.
func TestUntrustedCreatesNoDurableEventConsumer(t *testing.T) {
	url := appliedServer(t)
	ncU, jsU, _, logU := openAs(t, url, "untrusted")
	if _, err := jsU.CreateConsumer(shortCtx(t), protocol.StreamEvents, jetstream.ConsumerConfig{Durable: "keep-me", FilterSubject: "bench.events.>"}); err == nil {
		t.Error("the untrusted user created a durable consumer on BENCH_EVENTS")
	}
	waitViolationAs(t, "untrusted", logU, "$JS.API.CONSUMER.CREATE."+protocol.StreamEvents+".keep-me")
	req := []byte(`{"stream_name":"` + protocol.StreamEvents + `","config":{"durable_name":"keep-me-too","deliver_policy":"all","ack_policy":"none"}}`)
	msg, err := ncU.RequestWithContext(shortCtx(t), "$JS.API.CONSUMER.CREATE."+protocol.StreamEvents, req)
	if err != nil {
		t.Fatalf("the legacy ephemeral endpoint: %v", err)
	}
	if !strings.Contains(string(msg.Data), `"error"`) {
		t.Errorf("a durable through the legacy ephemeral endpoint: %s, want the server's refusal", msg.Data)
	}
	_, jsA, _ := as(t, url, "admin")
	events, err := jsA.Stream(t.Context(), protocol.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	names := events.ConsumerNames(t.Context())
	for name := range names.Name() {
		if strings.HasPrefix(name, "keep-me") {
			t.Errorf("consumer %s exists on BENCH_EVENTS", name)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	_, jsP, _ := as(t, url, "producer")
	if _, err := jsP.OrderedConsumer(t.Context(), protocol.StreamEvents, jetstream.OrderedConsumerConfig{}); err != nil {
		t.Errorf("the producer's ordered consumer: %v", err)
	}
}
