package authtest

import (
	"os"
	"testing"

	"github.com/benchfleet/benchfleet/internal/faulttest"
)

// TestMain removes the benchfleet binary the CI workflow test built.
func TestMain(m *testing.M) {
	code := m.Run()
	faulttest.RemoveBinary()
	os.Exit(code)
}
