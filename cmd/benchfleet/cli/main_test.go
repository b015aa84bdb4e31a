package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/benchfleet/benchfleet/internal/faulttest"
)

// TestMain keeps what workers remember between starts (--state-dir, by
// default under $HOME) in a folder of the test process's own, for the
// workers run in process and for the binaries the tests start.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "benchfleet-cli-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("BENCHFLEET_STATE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	faulttest.RemoveBinary() // the binaries the tests built
	os.Exit(code)
}
