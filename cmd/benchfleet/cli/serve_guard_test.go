package cli_test

import (
	"os"
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
