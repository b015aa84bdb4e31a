//go:build unix

package bench

import (
	"os"
	"testing"

	"github.com/benchfleet/benchfleet/internal/faulttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	faulttest.RemoveBinary() // the binary TestRunWorkerCPU built
	os.Exit(code)
}
