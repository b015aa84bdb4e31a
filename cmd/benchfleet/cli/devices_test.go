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

// `benchfleet devices` says which user harness jobs run as: a uid of its
// own per job under a root worker with no isolation setting, none when
// opted out.
func TestDevicesSayTheJobUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a uid per job is a root worker's")
	}
	host := harnesstest.NewTTHost(t, 1)
	for _, tc := range []struct{ isolation, want string }{
		{"", "harness jobs run as a uid of its own per job (uids 2147352576-2147418111)"},
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

// `benchfleet devices` lists the walls of each harness runner's box: a
// line per runner in the table (up, then down with why), and walls on
// each harness slot in the JSON, none on a built-in slot. A wall the
// config takes down (a harness's isolation.network: host) is down by
// choice; one the host cannot build is down, and with isolation.walls
// require (the default) the table says the worker would not start.
func TestDevicesSayTheWalls(t *testing.T) {
	t.Parallel()
	host := harnesstest.NewTTHost(t, 1)
	discovery := fmt.Sprintf("discovery:\n  enabled: true\n  tt_smi: %s\n  dev_root: %s\n  sysfs_root: %s\n", host.TTSMI, host.DevRoot, host.Sys)
	devices := func(t *testing.T, extra string, args ...string) (string, string) {
		t.Helper()
		cfg := filepath.Join(t.TempDir(), "worker.yaml")
		if err := os.WriteFile(cfg, []byte(discovery+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, append([]string{"devices", "--config", cfg, "--slots", "cpu=1"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out, errOut
	}
	names := []string{"mount", "pid", "network", "devices", "uid", "pids", "memory", "cpu", "disk"}
	type wall struct {
		Name   string `json:"name"`
		Up     bool   `json:"up"`
		Chosen bool   `json:"chosen"`
		Detail string `json:"detail"`
	}
	readJSON := func(t *testing.T, out string) map[string][]wall {
		t.Helper()
		var devs []struct {
			ID    string `json:"id"`
			Walls []wall `json:"walls"`
		}
		if err := json.Unmarshal([]byte(out), &devs); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		byID := map[string][]wall{}
		for _, d := range devs {
			byID[d.ID] = d.Walls
		}
		return byID
	}

	t.Run("host network by choice", func(t *testing.T) {
		out, _ := devices(t, "forge:\n  isolation: {network: host}\n", "--format", "json")
		byID := readJSON(t, out)
		if w := byID["cpu-0"]; len(w) != 0 {
			t.Errorf("built-in slot has walls: %+v", w)
		}
		walls := byID["tt0"]
		if len(walls) != len(names) {
			t.Fatalf("tt0 walls %+v, want %v", walls, names)
		}
		for i, w := range walls {
			if w.Name != names[i] || w.Detail == "" {
				t.Errorf("wall %d: %+v, want %s with a detail", i, w, names[i])
			}
		}
		if w := walls[2]; w.Up || !w.Chosen || !strings.Contains(w.Detail, "isolation.network: host") {
			t.Errorf("network wall %+v, want down by choice", w)
		}
		// Every other wall stands where the box can be built (root,
		// bubblewrap, cgroup controllers).
		var down []string
		for _, w := range walls {
			if !w.Up && !w.Chosen {
				down = append(down, w.Name+": "+w.Detail)
			}
		}
		if len(down) > 0 {
			if os.Getenv("BENCHFLEET_REQUIRE_BOX") == "1" {
				t.Errorf("walls down (BENCHFLEET_REQUIRE_BOX=1 requires them): %v", down)
			} else {
				t.Logf("walls down on this host: %v", down)
			}
		}
		table, _ := devices(t, "forge:\n  isolation: {network: host}\n")
		if !strings.Contains(table, "forge walls: up: mount pid devices") ||
			!strings.Contains(table, "network (by choice: the host's network (isolation.network: host))") {
			t.Errorf("table:\n%s", table)
		}
	})

	t.Run("a wall the host cannot build", func(t *testing.T) {
		for _, tc := range []struct {
			walls   string
			refused bool
		}{{"", true}, {"  walls: warn\n", false}} {
			out, _ := devices(t, "isolation:\n  bwrap: /nonexistent/bwrap\n"+tc.walls)
			if !strings.Contains(out, "forge walls: up: ") || !strings.Contains(out, "down: mount pid network devices (no sandbox: bubblewrap not found") {
				t.Errorf("walls %q: table:\n%s", tc.walls, out)
			}
			if got := strings.Contains(out, "forge: a worker with this config would not start"); got != tc.refused {
				t.Errorf("walls %q: refusal said %t, want %t:\n%s", tc.walls, got, tc.refused, out)
			}
		}
	})

	t.Run("no sandbox by choice", func(t *testing.T) {
		out, _ := devices(t, "isolation: {sandbox: none}\n", "--format", "json")
		for _, w := range readJSON(t, out)["tt0"][:4] {
			if w.Up || !w.Chosen {
				t.Errorf("wall %+v, want down by choice", w)
			}
		}
	})
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
