package e2e

import (
	"testing"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }
