package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/device"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker"
)

// deadBoard fails every health check and reset.
type deadBoard struct{}

func (deadBoard) Check(context.Context, device.Device) error {
	return errors.New("tt-smi: board not found")
}
func (deadBoard) Reset(context.Context, device.Device) error { return errors.New("reset failed") }

// countingNotifier records what the worker asked to notify and whether it
// was sent.
type countingNotifier struct {
	n    *notify.Webhook
	mu   sync.Mutex
	sent map[string][]bool // event -> results
}

func (c *countingNotifier) Notify(ctx context.Context, key string, m protocol.Notification) (bool, error) {
	sent, err := c.n.Notify(ctx, key, m)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[m.Event] = append(c.sent[m.Event], sent)
	return sent, err
}

func (c *countingNotifier) calls(event string) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.sent[event]...)
}

// A worker with a webhook tells about a quarantined device and about a
// dead-lettered job, each once; a worker restarted with the same store
// does not tell the same quarantine again the same day.
func TestWorkerNotifiesQuarantineAndDeadLetter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var msgs []protocol.Notification
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m protocol.Notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("body: %v", err)
		}
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}))
	defer hook.Close()
	got := func(event string) []protocol.Notification {
		mu.Lock()
		defer mu.Unlock()
		var out []protocol.Notification
		for _, m := range msgs {
			if m.Event == event {
				out = append(out, m)
			}
		}
		return out
	}
	srv := fleettest.Server(t)
	nc, js := fleettest.Connect(t, srv.ClientURL())
	tc := topology.Config{AckWait: 5 * time.Second}
	topo := fleettest.Topology(t, js, tc)
	store := newStore(t)
	n, err := notify.NewWebhook(notify.Config{URL: hook.URL, Dedup: notify.StoreDedup{Bucket: store}})
	if err != nil {
		t.Fatal(err)
	}
	slots := fleettest.SimSlots("sim", 1)
	bad := fleettest.SimSlots("bad", 1)[0]
	bad.Health = deadBoard{}
	cn := &countingNotifier{n: n, sent: map[string][]bool{}}
	cfg := worker.Config{ID: "notify-worker", Conn: nc, Store: store, Slots: append(slots, bad), AckWait: tc.AckWait,
		IdlePoll: 100 * time.Millisecond, Notifier: cn, Log: zerolog.Nop()}
	w := fleettest.StartWorker(t, cfg)
	fleettest.Eventually(t, 10*time.Second, "a quarantine notification", func() bool { return len(got(protocol.NotifyQuarantine)) == 1 })
	q := got(protocol.NotifyQuarantine)[0]
	if q.Device != "bad-0" || q.Worker != "notify-worker" || !strings.Contains(q.Text, "bad-0") || !strings.Contains(q.Text, "board not found") {
		t.Errorf("quarantine message: %+v", q)
	}

	jobs := fleettest.SimJobs(t, "notify-run", 1, map[string]string{"sim.fail": "permanent"})
	fleettest.Submit(t, js, topo, store, "notify-run", protocol.PriorityNormal, jobs)
	fleettest.Eventually(t, 20*time.Second, "a dead-letter notification", func() bool { return len(got(protocol.NotifyDeadLetter)) == 1 })
	d := got(protocol.NotifyDeadLetter)[0]
	if d.Job != jobs[0].ID || d.Run != "notify-run" || !strings.Contains(d.Text, jobs[0].ID) || !strings.Contains(d.Text, "permanent failure") {
		t.Errorf("dead-letter message: %+v", d)
	}

	// Restart with the same store and bucket: the same quarantine is not
	// told again.
	w.Kill()
	<-w.Done()
	cfg.Slots = append(fleettest.SimSlots("sim", 1), bad)
	w2 := fleettest.StartWorker(t, cfg)
	fleettest.Eventually(t, 10*time.Second, "the restarted worker's bad board out of service", func() bool {
		for _, d := range w2.Status().Devices {
			if d.ID == "bad-0" {
				return d.State == protocol.DeviceQuarantined
			}
		}
		return false
	})
	// The quarantine lasts (bench-health) rather than happening again, and
	// a new quarantine of the same board on the same day would be
	// deduplicated: either way nothing more is sent.
	if c := cn.calls(protocol.NotifyQuarantine); len(c) > 2 || c[0] != true || (len(c) == 2 && c[1] != false) {
		t.Errorf("quarantine notifications sent: %v, want [true] or [true false]", c)
	}
	if c := len(got(protocol.NotifyQuarantine)); c != 1 {
		t.Errorf("%d quarantine notifications after the restart, want still 1", c)
	}
}
