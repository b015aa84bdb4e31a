package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
)

func fastRetries(c Config) Config {
	c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, 5*time.Millisecond
	return c
}

// A POST that gets a 503 is retried; the message arrives once; the same
// key is not sent again; a different key is.
func TestWebhookRetriesThenDedups(t *testing.T) {
	t.Parallel()
	var calls, ok atomic.Int32
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		last.Store(string(body))
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		ok.Add(1)
	}))
	defer srv.Close()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewWebhook(fastRetries(Config{URL: srv.URL, Dedup: StoreDedup{Bucket: b}}))
	if err != nil {
		t.Fatal(err)
	}
	m := protocol.Notification{Text: "hello", Event: protocol.NotifyQuarantine, Device: "tt0"}
	for i, want := range []bool{true, false} {
		sent, err := h.Notify(t.Context(), "quarantine/w/tt0", m)
		if err != nil || sent != want {
			t.Fatalf("call %d: sent %v err %v, want %v", i, sent, err, want)
		}
	}
	if ok.Load() != 1 || calls.Load() != 2 {
		t.Errorf("%d delivered of %d calls, want 1 of 2 (one retry)", ok.Load(), calls.Load())
	}
	var got protocol.Notification
	if err := json.Unmarshal([]byte(last.Load().(string)), &got); err != nil || got.Text != "hello" || got.Device != "tt0" || got.Time.IsZero() {
		t.Errorf("body %v: %+v", err, got)
	}
	if sent, err := h.Notify(t.Context(), "quarantine/w/tt1", m); !sent || err != nil {
		t.Errorf("another key: sent %v err %v", sent, err)
	}
}

// A webhook that keeps failing: Notify fails after its retries, names no
// secret of the URL, and releases the key so the next call sends.
func TestWebhookFailureReleasesKey(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	var delivered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		delivered.Add(1)
	}))
	defer srv.Close()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := srv.URL + "/hooks/SECRET-TOKEN"
	h, err := NewWebhook(fastRetries(Config{URL: u, Retries: 2, Dedup: StoreDedup{Bucket: b}}))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := h.Notify(t.Context(), "k", protocol.Notification{Text: "x", Event: protocol.NotifyDeadLetter})
	if sent || err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("sent %v err %v: want an error without the URL's path", sent, err)
	}
	if ok, _ := b.Exists(t.Context(), DedupKey("k")); ok {
		t.Error("the dedup record of an unsent message is still there")
	}
	fail.Store(false)
	if sent, err := h.Notify(t.Context(), "k", protocol.Notification{Text: "x", Event: protocol.NotifyDeadLetter}); !sent || err != nil || delivered.Load() != 1 {
		t.Errorf("after the webhook recovered: sent %v err %v delivered %d", sent, err, delivered.Load())
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "ftp://x/y", "http://", "not a url"} {
		if _, err := NewWebhook(Config{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	if _, err := NewGitHub(GitHubConfig{}); err == nil {
		t.Error("GitHub without a token accepted")
	}
	g, err := NewGitHub(GitHubConfig{Token: "t", APIBase: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ repo, sha, state string }{
		{"not a repo", "abcdef0", protocol.CommitSuccess}, {"a/b", "xyz", protocol.CommitSuccess}, {"a/b", "abcdef0", "green"},
	} {
		if err := g.SetStatus(t.Context(), c.repo, c.sha, protocol.CommitStatus{State: c.state}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestRepoName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"acme/bench": "acme/bench", "https://github.com/acme/bench.git": "acme/bench",
		"git@github.com:acme/bench.git": "acme/bench", "acme": "", "https://gitlab.com/a/b": "",
	} {
		got, ok := RepoName(in)
		if (want == "") == ok || (ok && got != want) {
			t.Errorf("RepoName(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}
