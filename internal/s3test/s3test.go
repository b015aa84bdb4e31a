// Package s3test runs a real S3-compatible server (VersityGW, posix
// backend) for tests: one process per test on a free 127.0.0.1 port, its
// data under t.TempDir(), a bucket created, the process killed on cleanup.
//
// The versitygw binary is found in $BENCHFLEET_VERSITYGW, else
// <repo root>/.tools/bin/versitygw (scripts/install-versitygw.sh puts it
// there), else $PATH. When it is missing the test is skipped, unless
// BENCHFLEET_REQUIRE_S3 is set: then it fails, so CI cannot silently skip
// the S3 tests.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Environment variables read by Start.
const (
	// EnvBinary names the versitygw binary to use.
	EnvBinary = "BENCHFLEET_VERSITYGW"
	// EnvRequire, when set to anything but "" or "0", turns a missing
	// binary into a test failure instead of a skip.
	EnvRequire = "BENCHFLEET_REQUIRE_S3"
)

// Region is the region the server and its clients use.
const Region = "us-east-1"

const healthPath = "/health"

// Server is one running VersityGW. Its fields are fixed for its lifetime,
// across Stop and Start.
type Server struct {
	// Endpoint is the base URL, e.g. "http://127.0.0.1:39123".
	Endpoint string
	// Bucket is the bucket Start created.
	Bucket string
	// AccessKey and SecretKey are the root credentials of the server.
	AccessKey string
	SecretKey string
	// Dir holds the buckets (posix backend); MetaDir the sidecar metadata.
	Dir     string
	MetaDir string

	t      testing.TB
	bin    string
	addr   string
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	output *lockedBuffer
}

// Binary returns the path of the versitygw binary, or "" if none is found.
func Binary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	if root := repoRoot(); root != "" {
		p := filepath.Join(root, ".tools", "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Start runs a fresh VersityGW for t, waits until it answers, creates a
// bucket, and registers its shutdown with t.Cleanup. It skips t (or fails
// it, with BENCHFLEET_REQUIRE_S3 set) when the binary is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "versitygw not found: run scripts/install-versitygw.sh, or set " + EnvBinary
		if v := os.Getenv(EnvRequire); v != "" && v != "0" {
			t.Fatalf("%s (%s is set, so S3 tests may not skip)", msg, EnvRequire)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("versitygw binary %s: %v", bin, err)
	}
	root := t.TempDir()
	s := &Server{
		Bucket:    "bench-" + randomHex(4),
		AccessKey: "AK" + strings.ToUpper(randomHex(8)),
		SecretKey: randomHex(20),
		Dir:       filepath.Join(root, "data"),
		MetaDir:   filepath.Join(root, "meta"),
		t:         t,
		bin:       bin,
		output:    &lockedBuffer{},
	}
	for _, d := range []string{s.Dir, s.MetaDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A port can be taken between probing and binding; try a few.
	var err error
	for range 5 {
		s.addr = freePort(t)
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("start versitygw: %v\n%s", err, s.output.String())
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", s.output.String())
		}
	})
	s.createBucket()
	return s
}

// Start restarts a stopped server on the same port and directories and
// waits until it answers. It fails the test if the server does not come up.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart versitygw: %v\n%s", err, s.output.String())
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	cmd := exec.Command(s.bin, "--port", s.addr, "--quiet", "--health", healthPath,
		"posix", "--sidecar", s.MetaDir, s.Dir)
	// Credentials through the environment, not argv (not visible in ps).
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	cmd.Stdout = s.output
	cmd.Stderr = s.output
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	if err := waitReady(s.Endpoint+healthPath, done, 15*time.Second); err != nil {
		_ = cmd.Process.Kill()
		<-done
		s.cmd, s.done = nil, nil
		return err
	}
	return nil
}

// Stop kills the server (an abrupt outage, like a crash) and waits for the
// process to exit. The data stays; Start brings the server back. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}

// Freeze stops the server's process with SIGSTOP: it keeps its port, the
// kernel still accepts connections for it, and nothing is answered until
// Thaw (a hung store, not a dead one). Freezing a stopped server does
// nothing. Stop kills a frozen server as it kills a running one.
func (s *Server) Freeze() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	s.waitStopped()
}

// waitStopped returns once every thread of the server is stopped: kill
// returns when SIGSTOP is queued, and a thread already running on another
// CPU could still answer a request that arrives before the group stop
// completes.
func (s *Server) waitStopped() {
	s.t.Helper()
	s.mu.Lock()
	pid := 0
	if s.cmd != nil {
		pid = s.cmd.Process.Pid
	}
	s.mu.Unlock()
	if pid == 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // the thread is gone
			}
			st := string(b)
			if i := strings.LastIndexByte(st, ')'); i < 0 || i+2 >= len(st) || (st[i+2] != 'T' && st[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw %d: not stopped 10 s after SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// Thaw resumes a frozen server with SIGCONT.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("versitygw: %s: %v", sig, err)
	}
}

// Client returns an SDK client for the server, for tests that look behind
// the storage package (e.g. to list pending multipart uploads).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// URL is the store URL of the bucket with an optional prefix, e.g.
// s3://bench-1a2b/prefix?endpoint=...&region=us-east-1&path_style=true.
// Credentials are not in it: set them with SetEnv or pass them in config.
func (s *Server) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=%s&path_style=true", s.Bucket, prefix, s.Endpoint, Region)
}

// SetEnv points the standard AWS chain of this test at the server:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, and no shared
// config or instance metadata. It uses t.Setenv, so the test cannot be
// parallel.
func (s *Server) SetEnv(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", Region)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func (s *Server) createBucket() {
	s.t.Helper()
	s.mustCreateBucket(s.t, s.Bucket)
}

// NewBucket creates one more empty bucket on the server and returns its
// name, for tests that need a bucket each but not a server each.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := "bench-" + randomHex(6)
	s.mustCreateBucket(t, name)
	return name
}

func (s *Server) mustCreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}

// waitReady polls url until it answers 200, the process exits, or the
// deadline passes.
func waitReady(url string, exited <-chan struct{}, within time.Duration) error {
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("health check: HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %v", within, err)
		}
		select {
		case <-exited:
			return errors.New("versitygw exited during startup")
		case <-tick.C:
		}
	}
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil // enough to debug; do not grow without bound
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
