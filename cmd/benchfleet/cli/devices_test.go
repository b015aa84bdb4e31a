package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

// `benchfleet devices` lists discovered Tenstorrent boards (stand-in
// tt-smi) and built-in slots in the JSON shape of DESIGN §7.
func TestDevicesJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := harnesstest.NewTTHost(t, 2)
	cfg := filepath.Join(dir, "worker.yaml")
	// Only a discovery section: listing devices needs no checkout.
	body := fmt.Sprintf("discovery:\n  enabled: true\n  tt_smi: %s\n  dev_root: %s\n  sysfs_root: %s\n", host.TTSMI, host.DevRoot, host.Sys)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "devices", "--config", cfg, "--slots", "cpu=1", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var devs []struct {
		ID      string `json:"id"`
		Pool    string `json:"pool"`
		Arch    string `json:"arch"`
		Chips   int    `json:"chips"`
		Path    string `json:"path"`
		Healthy bool   `json:"healthy"`
	}
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(devs) != 3 {
		t.Fatalf("want cpu-0, tt0, tt1: %+v", devs)
	}
	for _, d := range devs[1:] {
		if d.Pool != "n150" || d.Arch != "wormhole" || d.Chips != 1 || !d.Healthy || d.Path == "" {
			t.Errorf("device %+v", d)
		}
	}
	if devs[0].ID != "cpu-0" || devs[0].Pool != "cpu" {
		t.Errorf("built-in slot %+v", devs[0])
	}

	// An unknown key in the config is an error naming it.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("discovery:\n  enabeld: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "devices", "--config", bad); code != 64 || !strings.Contains(errOut, `unknown key "enabeld"`) || strings.Contains(errOut, "cli.") {
		t.Fatalf("bad config: exit %d: %s", code, errOut)
	}
}
