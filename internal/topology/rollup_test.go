package topology

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
	"github.com/benchfleet/benchfleet/protocol"
)

func plainJS(t *testing.T) jetstream.JetStream {
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
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// A bucket made by nats.go allows roll-ups; Ensure
// warns about it, Apply closes it, and then a put with `Nats-Rollup: all`
// is refused and every key stays.
func TestApplyBucketsRefuseRollups(t *testing.T) {
	t.Parallel()
	js := plainJS(t)
	if _, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: protocol.BucketRuns}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := Ensure(t.Context(), js, Config{Log: zerolog.New(&log)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "allows roll-ups") || !strings.Contains(log.String(), protocol.BucketRuns) {
		t.Errorf("Ensure did not warn about %s allowing roll-ups:\n%s", protocol.BucketRuns, log.String())
	}
	for range 2 { // Apply again on a hardened bucket
		if _, err := Apply(t.Context(), js, Config{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Ensure(t.Context(), js, Config{Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{protocol.BucketRuns, protocol.BucketHealth, protocol.BucketWorkers} {
		s, err := js.Stream(t.Context(), "KV_"+b)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.CachedInfo().Config; RollupAllowed(c) {
			t.Errorf("bucket %s after Apply: allow_rollup %v deny_purge %v", b, c.AllowRollup, c.DenyPurge)
		}
	}
	for _, k := range []string{"a.manifest", "a.cancel", "b.manifest"} {
		if _, err := h.Runs.Put(t.Context(), k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	m := nats.NewMsg("$KV." + protocol.BucketRuns + ".x")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
	if _, err := js.PublishMsg(t.Context(), m); err == nil {
		t.Error("a roll-up put was accepted")
	}
	s, _ := js.Stream(t.Context(), "KV_"+protocol.BucketRuns)
	if err := s.Purge(t.Context()); err == nil {
		t.Error("a purge of the bucket was accepted")
	}
	for _, k := range []string{"a.manifest", "a.cancel", "b.manifest"} {
		if _, err := h.Runs.Get(t.Context(), k); err != nil {
			t.Errorf("key %s after the roll-up: %v", k, err)
		}
	}
	// Deletes (tombstones) still work.
	if err := h.Runs.Delete(t.Context(), "b.manifest"); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// The job and event streams have size limits, and
// the job stream refuses new jobs when full instead of dropping queued ones.
func TestApplyStreamLimits(t *testing.T) {
	t.Parallel()
	js := plainJS(t)
	h, err := Apply(t.Context(), js, Config{})
	if err != nil {
		t.Fatal(err)
	}
	jc := h.Jobs.CachedInfo().Config
	if jc.MaxBytes != MaxJobsBytes || jc.Discard != jetstream.DiscardNew || jc.MaxMsgSize != MaxJobMsgBytes {
		t.Errorf("%s: max bytes %d discard %v max msg %d", protocol.StreamJobs, jc.MaxBytes, jc.Discard, jc.MaxMsgSize)
	}
	ec := h.Events.CachedInfo().Config
	if ec.MaxBytes != MaxEventsBytes || ec.MaxMsgSize != MaxEventMsgBytes {
		t.Errorf("%s: max bytes %d max msg %d", protocol.StreamEvents, ec.MaxBytes, ec.MaxMsgSize)
	}
	if int64(protocol.MaxJobBytes) >= MaxJobMsgBytes {
		t.Errorf("MaxJobMsgBytes %d must exceed protocol.MaxJobBytes %d", MaxJobMsgBytes, protocol.MaxJobBytes)
	}
}
