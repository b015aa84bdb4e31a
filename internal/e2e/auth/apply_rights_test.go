package auth

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
)

// `topology apply` as a user deploy/nats does not let change the topology
// (a producer) fails at once saying to run it as admin, not after 30 s
// blaming a leader election (the fresh-clone user's report).
func TestTopologyApplyAsProducerSaysRunItAsAdmin(t *testing.T) {
	url, _ := inboxServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	apply := func(user string) (int, string) {
		t.Setenv("NATS_USER", user)
		t.Setenv("NATS_PASSWORD", "pw-"+user)
		var out, errb bytes.Buffer
		code := cmdline.Run(ctx, &out, &errb, "topology", "apply", "--nats", url, "--log-level", "error")
		return code, out.String() + errb.String()
	}
	if code, out := apply("admin"); code != cli.ExitOK {
		t.Fatalf("topology apply as admin: exit %d\n%s", code, out)
	}
	code, out := apply("producer")
	if code != cli.ExitUsage {
		t.Fatalf("topology apply as producer: exit %d, want %d\n%s", code, cli.ExitUsage, out)
	}
	wantParts(t, "topology apply as producer", out, `user "producer" may not change the topology`, "run it as the admin user")
	if strings.Contains(out, "leader") || strings.Contains(out, "deadline") {
		t.Errorf("topology apply as producer blames a leader or a deadline:\n%s", out)
	}
}
