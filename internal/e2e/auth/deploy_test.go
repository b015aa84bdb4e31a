package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

const deployDir = "../../../deploy/nats"

var passwords = map[string]string{"producer": "pw-producer", "untrusted": "pw-untrusted", "worker": "pw-worker", "reader": "pw-reader", "admin": "pw-admin", "sys": "pw-sys"}

// renderDeploy copies deploy/nats for node i (1..3) into a temp dir with
// the production paths and ports rewritten to test values, the passwords
// filled in and an extra nkey worker user. Every rewrite must match, so a
// change to the deploy files that the test does not understand fails it.
func renderDeploy(t *testing.T, i int, p *pki, routePorts []int, workerNKey string) string {
	t.Helper()
	dir := t.TempDir()
	rewrites := map[string][][2]string{
		fmt.Sprintf("nats-%d.conf", i): {},
		"common.conf": {
			{"/etc/nats/tls/server.pem", p.serverCert},
			{"/etc/nats/tls/server-key.pem", p.serverKey},
			{"/etc/nats/tls/ca.pem", p.ca},
			{"/var/lib/nats/jetstream", filepath.Join(dir, "js")},
			{"listen: 0.0.0.0:4222", fmt.Sprintf("listen: 127.0.0.1:%d", fleettest.FreePort(t))},
			{"http: 127.0.0.1:8222", fmt.Sprintf("http: 127.0.0.1:%d", fleettest.FreePort(t))},
			{"listen: 0.0.0.0:6222", fmt.Sprintf("listen: 127.0.0.1:%d", routePorts[i-1])},
			{"nats-route://nats-1:6222", fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[0])},
			{"nats-route://nats-2:6222", fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[1])},
			{"nats-route://nats-3:6222", fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[2])},
		},
		"accounts.conf": {
			{"$BENCH_PRODUCER_PASSWORD", `"` + passwords["producer"] + `"`},
			{"$BENCH_UNTRUSTED_PASSWORD", `"` + passwords["untrusted"] + `"`},
			{"$BENCH_WORKER_PASSWORD", `"` + passwords["worker"] + `"`},
			{"$BENCH_READER_PASSWORD", `"` + passwords["reader"] + `"`},
			{"$BENCH_ADMIN_PASSWORD", `"` + passwords["admin"] + `"`},
			{"$NATS_SYS_PASSWORD", `"` + passwords["sys"] + `"`},
			{"      { user: reader,", "      { nkey: " + workerNKey + ", permissions: $WORKER }\n      { user: reader,"},
		},
	}
	for name, rw := range rewrites {
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
	return filepath.Join(dir, fmt.Sprintf("nats-%d.conf", i))
}

// deployCluster starts the three nodes of deploy/nats.
func deployCluster(t *testing.T, p *pki, workerNKey string) []*server.Server {
	t.Helper()
	routePorts := []int{fleettest.FreePort(t), fleettest.FreePort(t), fleettest.FreePort(t)}
	var srvs []*server.Server
	for i := 1; i <= 3; i++ {
		conf := renderDeploy(t, i, p, routePorts, workerNKey)
		s, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats"), Name: fmt.Sprintf("nats-%d", i), ConfigFile: conf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		srvs = append(srvs, s)
	}
	return srvs
}

// connectAs dials through the real CLI code path, logging to a buffer.
func connectAs(t *testing.T, o natsconn.Options) (*nats.Conn, jetstream.JetStream, *logBuffer) {
	t.Helper()
	buf := &logBuffer{}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	nc, err := natsconn.Connect(t.Context(), o, zerolog.New(buf))
	if err != nil {
		t.Fatalf("connect %s: %v", o.User, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, buf
}

const violation = "Permissions Violation"

// waitViolation waits until log mentions a permissions violation on subject.
func waitViolation(t *testing.T, log *logBuffer, subject string) {
	t.Helper()
	fleettest.Eventually(t, 5*time.Second, "a permissions violation on "+subject, func() bool {
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, violation) && strings.Contains(line, subject) {
				return true
			}
		}
		return false
	})
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The deploy configuration, on three TLS nodes: the producer submits but
// cannot claim jobs or write heartbeats or dead letters; the reader reads
// but cannot publish jobs or create streams; the worker (here with an nkey)
// claims, runs and acks the job with no permission violation at all.
func TestDeployClusterPermissions(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	wkp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	wpub, _ := wkp.PublicKey()
	wseed, _ := wkp.Seed()
	seedFile := filepath.Join(t.TempDir(), "worker.nk")
	if err := os.WriteFile(seedFile, wseed, 0o600); err != nil {
		t.Fatal(err)
	}
	srvs := deployCluster(t, p, wpub)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.ClientURL()
	}
	url := strings.Join(urls, ",")
	tc := topology.Config{AckWait: 5 * time.Second, Replicas: 3}

	// Admin: apply the topology (retried while the cluster elects its meta
	// leader). Producer: open it and submit one job.
	_, jsA, _ := connectAs(t, natsconn.Options{URL: url, User: "admin", Password: passwords["admin"], TLSCA: p.ca, InboxPrefix: "_INBOX_admin"})
	fleettest.Eventually(t, 40*time.Second, "the admin to apply the topology", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err = topology.Apply(ctx, jsA, tc)
		if err != nil {
			t.Logf("apply: %v", err)
		}
		return err == nil
	})
	_, jsP, logP := connectAs(t, natsconn.Options{URL: url, User: "producer", Password: passwords["producer"], TLSCA: p.ca, InboxPrefix: "_INBOX_producer"})
	topoP, err := topology.Ensure(t.Context(), jsP, tc)
	if err != nil {
		t.Fatalf("producer ensure: %v", err)
	}
	const run = "auth-1"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "20ms"})
	sub := &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}
	if _, err := sub.Submit(t.Context(), submit.Submission{Run: run, Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs}); err != nil {
		t.Fatalf("producer submit: %v", err)
	}
	if strings.Contains(logP.String(), violation) {
		t.Fatalf("the producer hit a permissions violation while submitting:\n%s", logP.String())
	}
	// ... but cannot claim it.
	cons, err := jsP.Consumer(t.Context(), protocol.StreamJobs, protocol.ConsumerName("sim", protocol.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err == nil {
		for m := range batch.Messages() {
			t.Fatalf("the producer fetched a job: %s", m.Subject())
		}
	}
	waitViolation(t, logP, "$JS.API.CONSUMER.MSG.NEXT.BENCH_JOBS.jobs-sim-normal")
	// ... nor write a heartbeat or a dead letter.
	if _, err := topoP.Workers.Put(shortCtx(t), "fake-worker", []byte(`{}`)); err == nil {
		t.Error("the producer wrote a worker heartbeat")
	}
	waitViolation(t, logP, "$KV.bench-workers.fake-worker")
	if _, err := jsP.Publish(shortCtx(t), protocol.DeadSubject("sim"), []byte(`{}`)); err == nil {
		t.Error("the producer published a dead letter")
	}
	if info, err := cons.Info(t.Context()); err != nil || info.NumPending != 1 {
		t.Fatalf("the job should still be queued: %+v %v", info, err)
	}

	// Reader: reads; cannot publish jobs, create streams or cancel runs.
	_, jsR, logR := connectAs(t, natsconn.Options{URL: url, User: "reader", Password: passwords["reader"], TLSCA: p.ca, InboxPrefix: "_INBOX_reader"})
	topoR, err := topology.Open(t.Context(), jsR)
	if err != nil {
		t.Fatalf("reader open: %v", err)
	}
	if m, err := runstate.GetManifest(t.Context(), topoR.Runs, run); err != nil || len(m.Jobs) != 1 {
		t.Fatalf("reader manifest: %v", err)
	}
	if _, err := jsR.Publish(shortCtx(t), protocol.JobSubject("sim", protocol.PriorityHigh), []byte(`{}`)); err == nil {
		t.Error("the reader published a job")
	}
	waitViolation(t, logR, "bench.jobs.sim.high")
	if _, err := jsR.CreateStream(shortCtx(t), jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
		t.Error("the reader created a stream")
	}
	waitViolation(t, logR, "$JS.API.STREAM.CREATE.EVIL")
	if _, err := topology.Apply(shortCtx(t), jsR, tc); err == nil {
		t.Error("the reader ran topology.Apply")
	}
	// The reader through the CLI (password in the URL).
	readerURL := strings.Replace(urls[0], "://", "://reader:"+passwords["reader"]+"@", 1)
	clirun := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		code := cmdline.Run(ctx, &out, &errb, append([]string{"--nats", readerURL, "--tls-ca", p.ca, "--inbox-prefix", "_INBOX_reader", "--log-format", "json"}, args...)...)
		return code, out.String() + errb.String()
	}
	if code, out := clirun("runs", "list", "--format", "json"); code != 0 || !strings.Contains(out, run) {
		t.Errorf("reader runs list: exit %d\n%s", code, out)
	}
	if code, out := clirun("dlq", "list", "--format", "json"); code != 0 {
		t.Errorf("reader dlq list: exit %d\n%s", code, out)
	}
	// The reader cannot cancel: the server refuses its write of the run's
	// cancel flag (a permissions violation), `runs cancel` fails at that
	// write (exit 1, not a usage or connection error), and no flag is set.
	if err := submit.Cancel(shortCtx(t), topoR.Runs, run); err == nil {
		t.Error("the reader set a run's cancel flag")
	}
	waitViolation(t, logR, "$KV.bench-runs."+protocol.CancelKey(run))
	if code, out := clirun("runs", "cancel", run); code != cli.ExitFailed || !strings.Contains(out, "benchfleet: cancel "+run+": ") {
		t.Errorf("reader runs cancel: exit %d, want %d failing at the cancel itself:\n%s", code, cli.ExitFailed, out)
	}
	if _, err := topoR.Runs.Get(shortCtx(t), protocol.CancelKey(run)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("after the reader's cancel, the cancel flag: %v, want not found", err)
	}

	// Worker with its nkey: runs and acks the job.
	ncW, jsW, logW := connectAs(t, natsconn.Options{URL: url, NKeySeed: seedFile, TLSCA: p.ca, InboxPrefix: "_INBOX_worker"})
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{ID: "auth-worker", Conn: ncW, Store: store, Slots: fleettest.SimSlots("auth", 1),
		AckWait: tc.AckWait, Replicas: tc.Replicas, IdlePoll: 100 * time.Millisecond, WorkDir: t.TempDir(), Log: zerolog.New(logW)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopW := context.WithCancel(context.Background())
	if err := w.Start(wctx); err != nil {
		t.Fatalf("worker start: %v\n%s", err, logW.String())
	}
	t.Cleanup(func() { stopW(); <-w.Done() })
	fleettest.Eventually(t, 20*time.Second, "the worker's result", func() bool {
		r := fleettest.Results(t, store, run)[jobs[0].ID]
		return r != nil && r.Status == protocol.StatusPassed
	})
	fleettest.Eventually(t, 10*time.Second, "the job acked and the heartbeat visible to the reader", func() bool {
		info, err := cons.Info(t.Context())
		if err != nil || info.NumPending != 0 || info.NumAckPending != 0 {
			return false
		}
		e, err := topoR.Workers.Get(t.Context(), "auth-worker")
		if err != nil {
			return false
		}
		var st protocol.WorkerStatus
		return json.Unmarshal(e.Value(), &st) == nil && st.ID == "auth-worker"
	})
	if strings.Contains(logW.String(), violation) {
		t.Fatalf("the worker hit a permissions violation:\n%s", logW.String())
	}
	// The worker cannot enqueue jobs or cancel runs.
	if _, err := jsW.Publish(shortCtx(t), protocol.JobSubject("sim", protocol.PriorityHigh), []byte(`{}`)); err == nil {
		t.Error("the worker published a job")
	}
	if _, err := jsW.Publish(shortCtx(t), "$KV.bench-runs."+protocol.CancelKey(run), []byte(`x`)); err == nil {
		t.Error("the worker cancelled a run")
	}
	waitViolation(t, logW, "bench.jobs.sim.high")
	// Wrong password: refused at once.
	if _, err := natsconn.Connect(t.Context(), natsconn.Options{URL: url, User: "producer", Password: "wrong", TLSCA: p.ca, ConnectTimeout: 5 * time.Second}, zerolog.Nop()); err == nil ||
		!strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("wrong password: %v", err)
	}
}
