package auth

import (
	"testing"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

// cmdline is the command line run in process.
var cmdline = clitest.CLI{Main: cli.Run}

func TestMain(m *testing.M) { clitest.Main(m) }
