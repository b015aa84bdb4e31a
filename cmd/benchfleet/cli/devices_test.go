package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/device/harness/harnesstest"
)

// `benchfleet devices` lists discovered Tenstorrent boards (stand-in
// tt-smi) and built-in slots in the JSON shape scripts read ({id, pool, arch, chips, path, healthy}).
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

// `benchfleet devices` says which user harness jobs run as: nobody under
// a root worker with no isolation setting, none when opted out.
func TestDevicesSayTheJobUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the default job user (nobody) is a root worker's")
	}
	host := harnesstest.NewTTHost(t, 1)
	for _, tc := range []struct{ isolation, want string }{
		{"", "harness jobs run as nobody (65534:65534)"},
		{"isolation: {user: none}\n", "harness jobs run as none (the worker's own user)"},
	} {
		cfg := filepath.Join(t.TempDir(), "worker.yaml")
		body := fmt.Sprintf("discovery:\n  enabled: true\n  tt_smi: %s\n  dev_root: %s\n  sysfs_root: %s\n%s", host.TTSMI, host.DevRoot, host.Sys, tc.isolation)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, "devices", "--config", cfg)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("exit %d, output %q (%s), want %q", code, out, errOut, tc.want)
		}
		code, out, _ = run(t, "devices", "--config", cfg, "--format", "json")
		if code != 0 || !strings.Contains(out, `"job_user"`) {
			t.Fatalf("json exit %d: %s, want job_user", code, out)
		}
	}
}

// A variable that does not parse is said once, though every command that
// takes its flag reads it.
func TestBadEnvironmentValueSaidOnce(t *testing.T) {
	t.Setenv("BENCHFLEET_ACK_WAIT", "abc")
	code, _, errOut := run(t, "submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "1")
	if code != cli.ExitUsage || strings.Count(errOut, `BENCHFLEET_ACK_WAIT="abc"`) != 1 {
		t.Fatalf("exit %d, want 64 and the variable named once:\n%s", code, errOut)
	}
}

// Flags that do nothing without another, subcommands that do not exist and
// store URLs that name no store are usage errors (64), not silently
// ignored, answered with help, or failures of the command (1).
func TestIgnoredInputIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--pool", "cpu", "--model", "mlp", "--batch-size", "1", "--loop-count", "1", "--confirm", "3"}, "--confirm needs --wait --gate"},
		{[]string{"runs", "bogus"}, `unknown command "bogus" for "benchfleet runs"`},
		{[]string{"dlq", "bogus"}, `unknown command "bogus" for "benchfleet dlq"`},
		{[]string{"results", "query", "--store", "foo://bar"}, `unknown scheme "foo"`},
		{[]string{"results", "query", "--store", "s3://"}, "no bucket"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--store", "foo://bar", "--slots", "sim=1"}, `--store: storage: store URL "foo://bar"`},
	} {
		if code, _, errOut := run(t, tc.args...); code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want 64 and %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
	if code, out, _ := run(t, "runs"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("runs alone: exit %d, want its help:\n%s", code, out)
	}
}
