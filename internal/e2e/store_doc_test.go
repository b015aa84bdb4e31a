package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/e2e/clitest"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storagetest"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

// docBlocks returns the ```sh blocks of the section of doc headed head.
func docBlocks(t *testing.T, doc, head string) []string {
	t.Helper()
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == head
		case in && cur == nil && line == "```sh":
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// docs/STORE.md's VersityGW steps, run as written (the directory, the
// port and where the binaries are changed): the server starts, benchfleet
// reads the bucket with the documented URL and AWS variables, and the
// store conformance suite (conditional create included) passes on it.
func TestStoreDocRunsVersityGW(t *testing.T) {
	vgw := s3test.Binary()
	if vgw == "" {
		if v := os.Getenv(s3test.EnvRequire); v != "" && v != "0" {
			t.Fatal("versitygw not found (run scripts/install-versitygw.sh)")
		}
		t.Skip("versitygw not found: run scripts/install-versitygw.sh, or set " + s3test.EnvBinary)
	}
	blocks := docBlocks(t, "../../docs/STORE.md", "## VersityGW on one host")
	var script strings.Builder
	for _, b := range blocks {
		if strings.Contains(b, "go install") {
			continue // installing: the test has the pinned binary
		}
		script.WriteString(b)
	}
	if !strings.Contains(script.String(), "versitygw ") || !strings.Contains(script.String(), "benchfleet results query") {
		t.Fatalf("docs/STORE.md's VersityGW section has no server and client steps:\n%s", script.String())
	}
	dir := t.TempDir()
	port := strconv.Itoa(fleettest.FreePort(t))
	s := strings.NewReplacer("/srv/bench-store", dir, "127.0.0.1:7070", "127.0.0.1:"+port).Replace(script.String())
	s = "set -euo pipefail\n" + s + "echo \"VGW_PID=$!\"\necho \"KEYS=$ROOT_ACCESS_KEY_ID $ROOT_SECRET_ACCESS_KEY\"\necho \"STORE=$BENCHFLEET_STORE\"\n"
	bins := t.TempDir()
	for name, path := range map[string]string{"versitygw": vgw, "benchfleet": clitest.Binary(t)} {
		if err := os.Symlink(path, filepath.Join(bins, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", s)
	cmd.Env = []string{"PATH=" + bins + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_EC2_METADATA_DISABLED=true",
		"BENCHFLEET_STATE_DIR=" + t.TempDir()}
	// A file, not a pipe: the server the steps leave running keeps it open.
	logf, err := os.Create(filepath.Join(t.TempDir(), "steps.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Run()
	data, _ := os.ReadFile(logf.Name())
	out := bytes.NewBuffer(data)
	vals := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && (k == "VGW_PID" || k == "KEYS" || k == "STORE") {
			vals[k] = v
		}
	}
	if pid, perr := strconv.Atoi(vals["VGW_PID"]); perr == nil {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if err != nil {
		t.Fatalf("docs/STORE.md's steps: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "[]") {
		t.Errorf("benchfleet results query on the new store: want [], got\n%s", out.String())
	}
	keys := strings.Fields(vals["KEYS"])
	if len(keys) != 2 || vals["STORE"] == "" {
		t.Fatalf("the steps did not leave the key pair and BENCHFLEET_STORE:\n%s", out.String())
	}
	t.Setenv("AWS_ACCESS_KEY_ID", keys[0])
	t.Setenv("AWS_SECRET_ACCESS_KEY", keys[1])
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	url := vals["STORE"]
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		n++
		u := strings.Replace(url, "/farm?", "/farm-"+strconv.Itoa(n)+"?", 1)
		b, err := storeurl.Open(t.Context(), u, zerolog.Nop())
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}
