package worker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// JetStream is down while the last call of any kind failed, since the
// first failure; the change is logged and kicks the status once each way.
func TestJetStreamGate(t *testing.T) {
	t.Parallel()
	kicks := 0
	g := newJetStreamGate(zerolog.Nop(), func() { kicks++ })
	if d := g.down(); d != "" {
		t.Fatalf("a fresh gate is down: %q", d)
	}
	noResponders := errors.New("nats: no responders available for request")
	g.observe(jsFetch, noResponders)
	first := g.down()
	if !strings.HasPrefix(first, "jetstream: not answering since ") || !strings.Contains(first, "fetch: nats: no responders") {
		t.Fatalf("down: %q", first)
	}
	since := g.since
	g.observe(jsStatus, nil) // a heartbeat answered: the fetches still fail
	g.observe(jsFetch, noResponders)
	g.observe(jsStatus, errors.New("timeout"))
	if d := g.down(); !strings.Contains(d, "status: timeout") || !g.since.Equal(since) {
		t.Errorf("down %q since %s, want both failures since the first (%s)", d, g.since, since)
	}
	g.observe(jsFetch, nil)
	if g.down() == "" {
		t.Error("up while the heartbeat's last call failed")
	}
	g.observe(jsStatus, nil)
	if d := g.down(); d != "" || kicks != 2 {
		t.Errorf("down %q after every kind answered, %d kicks; want up, 2 kicks", d, kicks)
	}
}

// builds.fetch_timeout and fetch_per_mib are durations; bad ones are
// configuration errors naming the key.
func TestBuildsFetchDeadlines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml         string
		timeout, mib time.Duration
		err          string
	}{
		{yaml: "builds: {repos: {a/b: /srv/b.git}}"},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_timeout: 10s, fetch_per_mib: 500ms}", timeout: 10 * time.Second, mib: 500 * time.Millisecond},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_timeout: soon}", err: "builds.fetch_timeout"},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_per_mib: -1s}", err: "builds.fetch_per_mib"},
	} {
		path := filepath.Join(t.TempDir(), "worker.yaml")
		if err := os.WriteFile(path, []byte(c.yaml+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := LoadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		timeout, mib, err := f.Builds.FetchDeadlines()
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error naming %s", c.yaml, err, c.err)
		case c.err == "" && (err != nil || timeout != c.timeout || mib != c.mib):
			t.Errorf("%s: %s %s %v, want %s %s", c.yaml, timeout, mib, err, c.timeout, c.mib)
		}
	}
}
