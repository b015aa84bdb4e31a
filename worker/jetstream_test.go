package worker

import (
	"errors"
	"strings"
	"testing"

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
