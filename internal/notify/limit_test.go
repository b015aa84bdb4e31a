package notify

import (
	"encoding/json"
	"github.com/benchfleet/benchfleet/protocol"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// collector is a webhook receiver keeping every message it got.
func collector(t *testing.T) (*httptest.Server, func() []protocol.Notification) {
	t.Helper()
	var mu sync.Mutex
	var got []protocol.Notification
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m protocol.Notification
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []protocol.Notification {
		mu.Lock()
		defer mu.Unlock()
		return append([]protocol.Notification(nil), got...)
	}
}

// Text a job wrote cannot ping a channel, mention a user or hide a link
// in Slack's or Mattermost's syntax.
func TestWebhookNeutralizesChatSyntax(t *testing.T) {
	t.Parallel()
	srv, got := collector(t)
	h, err := NewWebhook(fastRetries(Config{URL: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	text := "benchfleet: job j of run r was dead-lettered: <!channel> <@U024BE7LH> <https://evil.example|open the CI log> [log](https://evil.example) @here"
	if _, err := h.Notify(t.Context(), "", protocol.Notification{Event: protocol.NotifyDeadLetter, Text: text}); err != nil {
		t.Fatal(err)
	}
	ms := got()
	if len(ms) != 1 {
		t.Fatalf("%d messages", len(ms))
	}
	for _, bad := range []string{"<!channel>", "<@U", "<https:", "](", "@here"} {
		if strings.Contains(ms[0].Text, bad) {
			t.Errorf("text passes %q: %q", bad, ms[0].Text)
		}
	}
}

// At most RateLimit messages of one event go out a minute; the others are
// held back and the next one sent says how many; another event has its
// own budget.
func TestWebhookRateLimit(t *testing.T) {
	t.Parallel()
	srv, got := collector(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h, err := NewWebhook(fastRetries(Config{URL: srv.URL, RateLimit: 3, Now: clock}))
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for range 20 {
		ok, err := h.Notify(t.Context(), "", protocol.Notification{Event: protocol.NotifyDeadLetter, Text: "garbage job dead"})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			sent++
		}
	}
	if ok, _ := h.Notify(t.Context(), "", protocol.Notification{Event: protocol.NotifyQuarantine, Text: "board out"}); !ok {
		t.Error("a quarantine was held back by the dead letters' limit")
	}
	if sent != 3 {
		t.Errorf("%d of 20 dead letters sent in one minute, want 3", sent)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if ok, _ := h.Notify(t.Context(), "", protocol.Notification{Event: protocol.NotifyDeadLetter, Text: "one more"}); !ok {
		t.Fatal("a dead letter a minute later was held back")
	}
	ms := got()
	last := ms[len(ms)-1]
	if last.Held != 17 || !strings.Contains(last.Text, "17 more dead_letter notification(s) were not sent") {
		t.Errorf("the next message after the window: held %d, text %q; want 17 held", last.Held, last.Text)
	}
}
