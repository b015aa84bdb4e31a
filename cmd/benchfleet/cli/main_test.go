package cli_test

import (
	"testing"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

// TestMain keeps what workers remember between starts in a folder of the
// test process's own and removes the binaries the tests built (clitest.Main).
func TestMain(m *testing.M) { clitest.Main(m) }
