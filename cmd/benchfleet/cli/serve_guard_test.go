package cli_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `serve --actions` without an operator token refuses to start, naming
// the flag and the variable that give one; an empty token file is refused
// too.
func TestServeActionsNeedToken(t *testing.T) {
	t.Parallel()
	if os.Getenv("BENCHFLEET_ACTIONS_TOKEN") != "" {
		t.Skip("BENCHFLEET_ACTIONS_TOKEN is set in this environment")
	}
	code, _, stderr := run(t, "serve", "--actions", "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "--actions-token-file") || !strings.Contains(stderr, "BENCHFLEET_ACTIONS_TOKEN") {
		t.Errorf("serve --actions without a token: exit %d, stderr %q", code, stderr)
	}
	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "serve", "--actions", "--actions-token-file", empty, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "is empty") {
		t.Errorf("serve --actions with an empty token file: exit %d, stderr %q", code, stderr)
	}
}

// `serve --actions` refuses an operator token shorter than 32 bytes at
// start (exit 64), from the token file or from the variable, naming where
// it came from, the rule and how to make one; a 32-byte token passes that
// check (and goes on to need NATS).
func TestServeRefusesShortToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short"), filepath.Join(dir, "long")
	if err := os.WriteFile(short, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, []byte(strings.Repeat("a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "serve", "--actions", "--actions-token-file", short, "--listen", "127.0.0.1:0")
	for _, want := range []string{"--actions-token-file " + short, "7 bytes", "at least 32", "openssl rand -hex 32"} {
		if code != 64 || !strings.Contains(stderr, want) {
			t.Errorf("serve --actions with a 7-byte token file: exit %d, stderr %q, want 64 and %q", code, stderr, want)
		}
	}
	code, _, stderr = run(t, "serve", "--actions", "--actions-token-file", long, "--listen", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1")
	if code == 64 || strings.Contains(stderr, "at least 32") {
		t.Errorf("serve --actions with a 32-byte token: exit %d, stderr %q, want past the token check", code, stderr)
	}
	code, _, stderr = run(t, "serve", "--public-url", "bench.example.com", "--listen", "127.0.0.1:0")
	if code != 64 || !strings.Contains(stderr, "--public-url") {
		t.Errorf("serve --public-url without a scheme: exit %d, stderr %q, want 64 naming the flag", code, stderr)
	}
	// From the variable (the real binary: its environment is its own).
	cmd := exec.Command(benchfleetBinary(t), "serve", "--actions", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "BENCHFLEET_ACTIONS_TOKEN=hunter2")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 64 || !strings.Contains(string(out), "$BENCHFLEET_ACTIONS_TOKEN") || !strings.Contains(string(out), "at least 32") {
		t.Errorf("serve --actions with a 7-byte $BENCHFLEET_ACTIONS_TOKEN: %v\n%s", err, out)
	}
	// dev --ui-actions takes the variable's token too: refused before the
	// farm starts.
	cmd = exec.Command(benchfleetBinary(t), "dev", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--ui", "127.0.0.1:0", "--ui-actions")
	cmd.Env = append(os.Environ(), "BENCHFLEET_ACTIONS_TOKEN=hunter2")
	out, err = cmd.CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 64 || !strings.Contains(string(out), "at least 32") {
		t.Errorf("dev --ui-actions with a 7-byte $BENCHFLEET_ACTIONS_TOKEN: %v\n%s", err, out)
	}
}
