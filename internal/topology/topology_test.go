package topology

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/embedded"
)

// leaderlessJS is a JetStream client whose API requests go through a relay
// that drops the first drop requests unanswered, as a stream or cluster
// without a leader does, and then passes every request on to a real
// JetStream server. drop < 0 drops every request.
func leaderlessJS(t *testing.T, drop int64) (jetstream.JetStream, *atomic.Int64) {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var seen atomic.Int64
	const prefix = "relay.API."
	if _, err := nc.Subscribe(prefix+">", func(m *nats.Msg) {
		if n := seen.Add(1); drop < 0 || n <= drop {
			return // no leader: nobody answers
		}
		req := nats.NewMsg("$JS.API." + strings.TrimPrefix(m.Subject, prefix))
		req.Data, req.Header = m.Data, m.Header
		resp, err := nc.RequestMsg(req, 5*time.Second)
		if err != nil {
			return
		}
		_ = m.RespondMsg(&nats.Msg{Data: resp.Data, Header: resp.Header})
	}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.NewWithAPIPrefix(nc, strings.TrimSuffix(prefix, "."))
	if err != nil {
		t.Fatal(err)
	}
	return js, &seen
}

// Requests sent while JetStream has no leader are never
// answered. Ensure gives each call its own short deadline and tries again,
// so it succeeds soon after the leader is back instead of waiting its whole
// deadline behind the first unanswered request.
func TestEnsureRetriesUnansweredCalls(t *testing.T) {
	t.Parallel()
	js, seen := leaderlessJS(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	h, err := Ensure(ctx, js, Config{CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Ensure after 3 unanswered requests: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Ensure took %s: it waited behind an unanswered request", took)
	}
	if h.Jobs == nil || h.Workers == nil {
		t.Fatalf("handles incomplete: %+v", h)
	}
	if seen.Load() <= 3 {
		t.Errorf("%d requests seen: the unanswered ones were not retried", seen.Load())
	}
}

// When JetStream never answers, Ensure gives up at its deadline with an
// error that Is ErrUnavailable and says the cluster is electing a leader.
func TestEnsureUnavailableWhenNoLeader(t *testing.T) {
	t.Parallel()
	js, seen := leaderlessJS(t, -1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Ensure(ctx, js, Config{CallTimeout: 300 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ensure with no JetStream leader: %v, want ErrUnavailable", err)
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) || !ue.NoLeader || ue.Attempts < 3 || ue.Object != "stream BENCH_JOBS" {
		t.Errorf("error %#v: want NoLeader, at least 3 attempts, object stream BENCH_JOBS", ue)
	}
	for _, want := range []string{"stream BENCH_JOBS", "electing a leader"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took > 3*time.Second {
		t.Errorf("Ensure returned after %s, past its 2s deadline", took)
	}
	if seen.Load() < 3 {
		t.Errorf("%d requests seen, want retries", seen.Load())
	}
	// Open (read-only commands) behaves the same.
	octx, ocancel := context.WithTimeout(t.Context(), time.Second)
	defer ocancel()
	if _, err := Open(octx, js); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open with no JetStream leader: %v, want ErrUnavailable", err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want unavailability
	}{
		{context.Background(), context.DeadlineExceeded, noLeader},
		{context.Background(), fmt.Errorf("wrapped: %w", nats.ErrTimeout), noLeader},
		{context.Background(), &jetstream.APIError{Code: 503, ErrorCode: errCodeClusterNotAvail}, noLeader},
		{context.Background(), &jetstream.APIError{Code: 500, ErrorCode: errCodeStreamOffline}, noLeader},
		{context.Background(), &jetstream.APIError{Code: 500, ErrorCode: errCodeNoPeers}, noLeader},
		{context.Background(), jetstream.ErrJetStreamNotEnabled, notEnabled},
		{context.Background(), nats.ErrNoResponders, notEnabled},
		{context.Background(), jetstream.ErrJetStreamNotEnabledForAccount, available},
		{context.Background(), jetstream.ErrStreamNotFound, available},
		{context.Background(), &jetstream.APIError{Code: 400, ErrorCode: 10058}, available},
		// A KV watch (ListKeys) on a cluster without quorum.
		{context.Background(), &nats.APIError{Code: 503, ErrorCode: nats.ErrorCode(errCodeClusterNotAvail), Description: "JetStream system temporarily unavailable"}, noLeader},
		{context.Background(), &nats.APIError{Code: 404, ErrorCode: 10059}, available},
		{done, context.DeadlineExceeded, available}, // the caller's own ctx ended
	} {
		if got := classify(c.ctx, c.err); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
