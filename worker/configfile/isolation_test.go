package configfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device/box"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// A worker's box has warm sandboxes unless its config says warm: off; any
// other value is refused at load, naming the key.
func TestIsolationWarm(t *testing.T) {
	c, err := configfile.IsolationSpec{}.Box()
	if err != nil || c.Warm != box.WarmOn {
		t.Fatalf("default isolation: warm %q, %v", c.Warm, err)
	}
	if c, err = (configfile.IsolationSpec{Warm: "off"}).Box(); err != nil || c.Warm != box.WarmOff {
		t.Fatalf("warm: off: warm %q, %v", c.Warm, err)
	}
	p := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(p, []byte("isolation:\n  warm: sometimes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = configfile.Load(p)
	if err == nil || !strings.Contains(err.Error(), `isolation.warm "sometimes" is not one of on, off`) {
		t.Fatalf("warm: sometimes: %v", err)
	}
}
