package auth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/natsconn"
)

// shippedUsers are the users of account BENCH in deploy/nats/accounts.conf
// (each with its permissions), by name, with the variable of its password.
func shippedUsers(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\{\s*user:\s*(\w+),\s*password:\s*\$(\w+),\s*permissions:`)
	users := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		users[m[1]] = m[2]
	}
	for _, u := range []string{"admin", "producer", "worker", "reader"} {
		if users[u] == "" {
			t.Fatalf("deploy/nats/accounts.conf has no user %s with a password variable and permissions: update the test with the config", u)
		}
	}
	return users
}

// inboxServer is accountsServer with a password set for every user of
// accounts.conf ("pw-<user>"), also the ones accountsServer does not know.
func inboxServer(t *testing.T) (string, map[string]string) {
	t.Helper()
	users := shippedUsers(t)
	for u, env := range users {
		t.Setenv(env, "pw-"+u)
	}
	return accountsServer(t), users
}

// With no --inbox-prefix, a named user gets
// _INBOX_<user>, the one inbox deploy/nats lets it subscribe to: every
// user of accounts.conf connects and gets a JetStream reply, through
// natsconn and through the command line (NATS_USER, no prefix).
func TestInboxPrefixDefaultsToUser(t *testing.T) {
	url, users := inboxServer(t)
	for u := range users {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		nc, err := natsconn.Connect(ctx, natsconn.Options{URL: url, User: u, Password: "pw-" + u, ConnectTimeout: 5 * time.Second}, zerolog.Nop())
		if err != nil {
			cancel()
			t.Errorf("%s without --inbox-prefix: %v", u, err)
			continue
		}
		js, err := jetstream.New(nc)
		if err == nil {
			_, err = js.AccountInfo(ctx)
		}
		if err != nil {
			t.Errorf("%s without --inbox-prefix: a JetStream request: %v (the default inbox is not the user's)", u, err)
		}
		nc.Close()
		cancel()
	}

	t.Setenv("NATS_INBOX_PREFIX", "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, c := range []struct{ user, cmd string }{{"admin", "topology apply"}, {"reader", "fleet status"}} {
		t.Setenv("NATS_USER", c.user)
		t.Setenv("NATS_PASSWORD", "pw-"+c.user)
		var out, errb bytes.Buffer
		if code := cmdline.Run(ctx, &out, &errb, append(strings.Fields(c.cmd), "--nats", url)...); code != cli.ExitOK {
			t.Errorf("%s as %s, no --inbox-prefix: exit %d\n%s%s", c.cmd, c.user, code, out.String(), errb.String())
		}
	}
}

// An inbox prefix the server refuses the user fails
// the command at once with the prefix to give (--inbox-prefix
// _INBOX_<user>, NATS_INBOX_PREFIX), not with "context deadline exceeded"
// when a request's deadline passes. An explicit prefix wins over the
// default, so a wrong one is used, and named.
func TestWrongInboxPrefixFailsNamingTheFix(t *testing.T) {
	url, _ := inboxServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, prefix := range []string{"_INBOX", "_INBOX_reader"} {
		_, err := natsconn.Connect(ctx, natsconn.Options{URL: url, User: "producer", Password: "pw-producer", InboxPrefix: prefix, ConnectTimeout: 5 * time.Second}, zerolog.Nop())
		if err == nil {
			t.Fatalf("producer with inbox %s: connected", prefix)
		}
		if !errors.Is(err, natsconn.ErrInboxDenied) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("producer with inbox %s: %v, want ErrInboxDenied", prefix, err)
		}
		wantParts(t, "natsconn, inbox "+prefix, err.Error(), "inbox prefix "+prefix, "--inbox-prefix _INBOX_producer", "NATS_INBOX_PREFIX")
	}

	// The command line, as a user would run it: submit --wait as the
	// producer with the reader's inbox in the environment.
	t.Setenv("NATS_USER", "producer")
	t.Setenv("NATS_PASSWORD", "pw-producer")
	t.Setenv("NATS_INBOX_PREFIX", "_INBOX_reader")
	var out, errb bytes.Buffer
	code := cmdline.Run(ctx, &out, &errb, "submit", "--nats", url, "--store", "file://"+t.TempDir(), "--pool", "sim", "--model", "simnet",
		"--batch-size", "2", "--loop-count", "4", "--run", "inbox-1", "--wait", "--timeout", "20s")
	if code == cli.ExitOK {
		t.Fatalf("submit with the reader's inbox: exit 0\n%s%s", out.String(), errb.String())
	}
	wantParts(t, "submit with the reader's inbox", errb.String(), "_INBOX_reader", "--inbox-prefix _INBOX_producer", "NATS_INBOX_PREFIX")
	if strings.Contains(errb.String(), "deadline exceeded") {
		t.Errorf("submit with the reader's inbox waited for a deadline:\n%s", errb.String())
	}
}

func wantParts(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s: the error does not say %q:\n%s", what, p, s)
		}
	}
}
