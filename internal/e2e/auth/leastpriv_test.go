package auth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/worker"
)

// accountsServer starts one node, no TLS, from deploy/nats/accounts.conf
// verbatim, the passwords taken from the environment as in production.
func accountsServer(t *testing.T) string {
	t.Helper()
	for user, env := range map[string]string{"producer": "BENCH_PRODUCER_PASSWORD", "untrusted": "BENCH_UNTRUSTED_PASSWORD", "worker": "BENCH_WORKER_PASSWORD",
		"reader": "BENCH_READER_PASSWORD", "admin": "BENCH_ADMIN_PASSWORD", "sys": "NATS_SYS_PASSWORD"} {
		t.Setenv(env, "pw-"+user)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(deployDir, "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("include ./accounts.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Options{Dir: filepath.Join(dir, "js"), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

// as connects as user with its own inbox prefix (_INBOX_<user>).
func as(t *testing.T, url, user string) (*nats.Conn, jetstream.JetStream, *logBuffer) {
	t.Helper()
	return connectAs(t, natsconn.Options{URL: url, User: user, Password: "pw-" + user, InboxPrefix: "_INBOX_" + user})
}

// The users of deploy/nats/accounts.conf on a real server: the admin
// applies the topology; producers and workers then work without a single
// permission violation, and every verb they must not have is refused: no
// stream or consumer edits (a producer shrinking BENCH_JOBS, a worker
// shrinking BENCH_DEAD), no deletes or purges, no reading another user's
// inbox (where JetStream replies carry job payloads).
func TestAccountsLeastPrivilege(t *testing.T) {
	url := accountsServer(t)

	// The admin applies the topology through the CLI.
	t.Setenv("NATS_PASSWORD", "pw-admin")
	var out, errb bytes.Buffer
	if code := cmdline.Run(t.Context(), &out, &errb, "--nats", url, "--user", "admin", "--inbox-prefix", "_INBOX_admin", "--log-format", "json",
		"topology", "apply", "--ack-wait", "5s"); code != 0 {
		t.Fatalf("topology apply as admin: exit %d\n%s%s", code, out.String(), errb.String())
	}
	t.Setenv("NATS_PASSWORD", "")
	_, jsA, _ := as(t, url, "admin")

	ncP, jsP, logP := as(t, url, "producer")
	ncW, jsW, logW := as(t, url, "worker")
	ncR, _, logR := as(t, url, "reader")

	// Producers and workers open the existing topology without changing it.
	topoP, err := topology.Ensure(t.Context(), jsP, topology.Config{AckWait: 5 * time.Second})
	if err != nil {
		t.Fatalf("producer ensure on an applied topology: %v\n%s", err, logP.String())
	}
	const run = "lp-1"
	jobs := fleettest.SimJobs(t, run, 1, map[string]string{"sim.duration": "20ms"})
	sub := &submit.Submitter{JS: jsP, Runs: topoP.Runs, Jobs: topoP.Jobs, Log: zerolog.Nop()}
	if _, err := sub.Submit(t.Context(), submit.Submission{Run: run, Submitter: "test", Priority: protocol.PriorityNormal, Jobs: jobs}); err != nil {
		t.Fatalf("producer submit: %v", err)
	}
	// A producer listening on every inbox while the worker claims.
	spy, err := ncP.SubscribeSync("_INBOX.>")
	if err == nil {
		defer spy.Unsubscribe()
	}
	spyW, err := ncP.SubscribeSync("_INBOX_worker.>")
	if err == nil {
		defer spyW.Unsubscribe()
	}
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{ID: "lp-worker", Conn: ncW, Store: store, Slots: fleettest.SimSlots("lp", 1),
		AckWait: 5 * time.Second, IdlePoll: 100 * time.Millisecond, WorkDir: t.TempDir(), Log: zerolog.New(logW)})
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
	for _, s := range []*nats.Subscription{spy, spyW} {
		if s == nil {
			continue
		}
		if m, err := s.NextMsg(100 * time.Millisecond); err == nil {
			t.Errorf("the producer read another user's inbox: %s %.80q", m.Subject, m.Data)
		}
	}
	waitViolationAs(t, "producer", logP, `Subscription to "_INBOX.>"`)
	waitViolationAs(t, "producer", logP, `Subscription to "_INBOX_worker.>"`)
	for _, l := range []*logBuffer{logP, logW} {
		for _, line := range strings.Split(l.String(), "\n") {
			if strings.Contains(line, violation) && !strings.Contains(line, "_INBOX") {
				t.Fatalf("a permissions violation in normal work: %s", line)
			}
		}
	}

	// The must-show: stream edits refused, the streams unchanged.
	for _, c := range []struct {
		who    string
		js     jetstream.JetStream
		stream string
	}{{"producer", jsP, protocol.StreamJobs}, {"worker", jsW, protocol.StreamDead}, {"worker", jsW, protocol.StreamJobs}} {
		s, err := jsA.Stream(t.Context(), c.stream)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgs = 1
		if _, err := c.js.UpdateStream(shortCtx(t), cfg); err == nil {
			t.Errorf("the %s edited %s", c.who, c.stream)
		}
		info, err := s.Info(t.Context())
		if err != nil || info.Config.MaxMsgs != -1 {
			t.Errorf("%s max msgs after the %s's edit: %d (%v)", c.stream, c.who, info.Config.MaxMsgs, err)
		}
	}

	// Every verb each user must not have, published raw: each is refused.
	streams := []string{protocol.StreamJobs, protocol.StreamEvents, protocol.StreamDead, "KV_" + protocol.BucketWorkers, "KV_" + protocol.BucketRuns}
	cons := protocol.ConsumerName("sim", protocol.PriorityNormal)
	var shared []string
	for _, s := range streams {
		shared = append(shared, "$JS.API.STREAM.UPDATE."+s, "$JS.API.STREAM.DELETE."+s, "$JS.API.STREAM.PURGE."+s,
			"$JS.API.STREAM.SNAPSHOT."+s, "$JS.API.STREAM.RESTORE."+s, "$JS.API.STREAM.LEADER.STEPDOWN."+s)
	}
	shared = append(shared,
		"$JS.API.STREAM.CREATE.EVIL",
		"$JS.API.STREAM.MSG.DELETE."+protocol.StreamJobs,
		"$JS.API.CONSUMER.CREATE."+protocol.StreamJobs+"."+cons+"."+protocol.JobSubject("sim", protocol.PriorityNormal),
		"$JS.API.CONSUMER.CREATE."+protocol.StreamJobs+".evil.bench.jobs.>",
		"$JS.API.CONSUMER.DURABLE.CREATE."+protocol.StreamJobs+"."+cons,
		"$JS.API.CONSUMER.DELETE."+protocol.StreamJobs+"."+cons,
		"$JS.API.CONSUMER.PAUSE."+protocol.StreamJobs+"."+cons,
		"$JS.API.CONSUMER.LEADER.STEPDOWN."+protocol.StreamJobs+"."+cons,
		"$JS.API.ACCOUNT.PURGE.BENCH",
		"$JS.API.META.LEADER.STEPDOWN",
		"$JS.API.SERVER.REMOVE",
	)
	denied := map[string]struct {
		nc   *nats.Conn
		log  *logBuffer
		pubs []string
		subs []string
	}{
		"producer": {ncP, logP, append(append([]string{}, shared...),
			"$JS.API.CONSUMER.MSG.NEXT."+protocol.StreamJobs+"."+cons, "$JS.ACK."+protocol.StreamJobs+".x.1.1.1.1.1",
			"bench.dead.sim", "$KV.bench-workers.fake"),
			[]string{"_INBOX.>", "_INBOX_worker.>", "_INBOX_reader.>", "_INBOX_admin.>", "bench.jobs.>", ">"}},
		"worker": {ncW, logW, append(append([]string{}, shared...),
			"bench.jobs.sim.high", "$KV.bench-runs."+protocol.CancelKey(run), "$JS.API.STREAM.MSG.DELETE."+protocol.StreamDead),
			[]string{"_INBOX.>", "_INBOX_producer.>", "_INBOX_reader.>", "_INBOX_admin.>", ">"}},
		"reader": {ncR, logR, append(append([]string{}, shared...),
			"$JS.API.STREAM.CREATE."+protocol.StreamJobs, "$JS.API.CONSUMER.MSG.NEXT."+protocol.StreamJobs+"."+cons,
			"bench.jobs.sim.high", "bench.events.x.y", "bench.dead.sim", "$KV.bench-runs.x", "$KV.bench-workers.x",
			"$JS.ACK."+protocol.StreamJobs+".x.1.1.1.1.1", "$JS.API.STREAM.MSG.DELETE."+protocol.StreamDead),
			[]string{"_INBOX.>", "_INBOX_producer.>", "_INBOX_worker.>", "_INBOX_admin.>", "bench.jobs.>", ">"}},
	}
	for user, d := range denied {
		for _, subj := range d.pubs {
			if err := d.nc.PublishRequest(subj, d.nc.NewRespInbox(), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		for _, subj := range d.subs {
			if s, err := d.nc.SubscribeSync(subj); err == nil {
				defer s.Unsubscribe()
			}
		}
		if err := d.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, subj := range d.pubs {
			waitViolationAs(t, user, d.log, fmt.Sprintf("Publish to %q", subj))
		}
		for _, subj := range d.subs {
			waitViolationAs(t, user, d.log, fmt.Sprintf("Subscription to %q", subj))
		}
	}
}

// waitViolationAs is waitViolation naming the user in the failure.
func waitViolationAs(t *testing.T, user string, log *logBuffer, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, violation) && strings.Contains(line, strings.ReplaceAll(what, `"`, `\"`)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: no permissions violation for %s: the verb is allowed", user, what)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
