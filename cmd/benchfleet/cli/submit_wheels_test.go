package cli_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

const (
	wheelCommit = "0123456789abcdef0123456789abcdef01234567"
	wheelName   = "tt_forge-0.1.dev1-cp310-cp310-linux_x86_64.whl"
)

// makeWheel writes a real wheel (a zip archive) named name into dir, its
// contents depending on payload, and returns its path and sha256.
func makeWheel(t *testing.T, dir, name, payload string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("tt_forge/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "VERSION = "+payload+"\n")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return p, hex.EncodeToString(sum[:])
}

// wheelSubmit is a forge job of pool n150 (no worker serves it: the job
// stays queued) for commit wheelCommit of acme/forge, with extra flags.
func wheelSubmit(natsURL, store, run string, extra ...string) []string {
	return append([]string{"submit", "--nats", natsURL, "--store", store, "--log-format", "json",
		"--pool", "n150", "--test", "forge/test/benchmark/test_vision.py::test_resnet50", "--model", "resnet50",
		"--batch-size", "8", "--loop-count", "32", "--repo", "acme/forge", "--commit", wheelCommit, "--branch", "main",
		"--run", run}, extra...)
}

// queuedJob is the job of run queued in BENCH_JOBS for pool n150 at high
// priority (a run of a commit).
func queuedJob(t *testing.T, js jetstream.JetStream, run string) *protocol.Job {
	t.Helper()
	st, err := js.Stream(t.Context(), protocol.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.GetLastMsgForSubject(t.Context(), protocol.JobSubject("n150", protocol.PriorityHigh))
	if err != nil {
		t.Fatal(err)
	}
	j, err := protocol.DecodeJob(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if j.Run != run {
		t.Fatalf("the last queued job is of run %s, want %s", j.Run, run)
	}
	return j
}

// checkUploadOnce: submit --build-wheel stores the wheel at its content key
// and every job names it; a second submit of the same file finds it there,
// uploads nothing and leaves the object as it was.
func checkUploadOnce(t *testing.T, store string, bucket storage.Bucket) {
	t.Helper()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	path, sum := makeWheel(t, t.TempDir(), wheelName, "1")
	key := protocol.BuildKey(sum, wheelName)
	if key != "builds/sha256/"+sum+"/"+wheelName {
		t.Fatalf("content key %s", key)
	}

	code, out, errOut := run(t, wheelSubmit(srv.ClientURL(), store, "wheels-1", "--build-wheel", path)...)
	if code != cli.ExitOK {
		t.Fatalf("submit --build-wheel: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "wheel "+wheelName) || !strings.Contains(errOut, "uploaded") || strings.Contains(errOut, "already in the store") {
		t.Errorf("first submit's progress does not say it uploaded %s:\n%s", wheelName, errOut)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() ([]byte, storage.Attributes) {
		t.Helper()
		rc, err := bucket.Get(t.Context(), key)
		if err != nil {
			t.Fatalf("the wheel is not in the store at %s: %v", key, err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		a, err := bucket.Attributes(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		return got, a
	}
	got, attrs := stored()
	if !bytes.Equal(got, want) {
		t.Fatalf("the store holds %d bytes at %s, want the wheel's %d", len(got), key, len(want))
	}
	var keys []string
	for k, err := range bucket.List(t.Context(), protocol.BuildPrefix+"sha256/") { // builds/commits/ holds the build record
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if len(keys) != 1 || keys[0] != key {
		t.Errorf("builds/sha256/ holds %v, want only %s", keys, key)
	}
	j := queuedJob(t, js, "wheels-1")
	if len(j.Source.Wheels) != 1 || j.Source.Wheels[0] != (protocol.Wheel{URL: key, SHA256: sum}) ||
		j.Source.Commit != wheelCommit || j.Source.Repo != "acme/forge" {
		t.Errorf("the queued job's source %+v, want the wheel %s with sha256 %s", j.Source, key, sum)
	}

	// Again, another run: nothing uploaded, the same key, the object as it was.
	code, out, errOut = run(t, wheelSubmit(srv.ClientURL(), store, "wheels-2", "--build-wheel", path)...)
	if code != cli.ExitOK {
		t.Fatalf("second submit: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "already in the store at "+key) || strings.Contains(errOut, "uploaded") {
		t.Errorf("second submit's progress does not say the wheel was already in the store:\n%s", errOut)
	}
	again, attrs2 := stored()
	if !bytes.Equal(again, want) || !attrs2.LastModified.Equal(attrs.LastModified) {
		t.Errorf("the object at %s changed: modified %v, then %v", key, attrs.LastModified, attrs2.LastModified)
	}
	if j2 := queuedJob(t, js, "wheels-2"); len(j2.Source.Wheels) != 1 || j2.Source.Wheels[0].URL != key {
		t.Errorf("the second run's job names %+v, want %s", j2.Source.Wheels, key)
	}
}

func TestSubmitBuildWheelUploadsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bucket, err := file.NewBucket(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	checkUploadOnce(t, "file://"+dir, bucket)
}

// The same against S3 (VersityGW): the conditional create and the
// attributes of an object already there.
func TestSubmitBuildWheelUploadsOnceS3(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t) // not parallel: sets the AWS_* environment, AWS_EC2_METADATA_DISABLED too
	store := gw.URL("farm")
	bucket, err := storeurl.Open(t.Context(), store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	checkUploadOnce(t, store, bucket)
}

// --build-wheel takes a pattern ('dist/*.whl') and the files a shell
// expanded one into (--build-wheel dist/a.whl dist/b.whl); --wheel names a
// wheel already in the store; the job installs them all.
func TestSubmitBuildWheelPatternsAndKeys(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	storeDir := t.TempDir()
	store := "file://" + storeDir
	dist := t.TempDir()
	_, sumA := makeWheel(t, dist, "a-1.0-py3-none-any.whl", "a")
	_, sumB := makeWheel(t, dist, "b-2.0-py3-none-any.whl", "b")
	keyA, keyB := protocol.BuildKey(sumA, "a-1.0-py3-none-any.whl"), protocol.BuildKey(sumB, "b-2.0-py3-none-any.whl")

	code, out, errOut := run(t, wheelSubmit(srv.ClientURL(), store, "pattern", "--build-wheel", filepath.Join(dist, "*.whl"))...)
	if code != cli.ExitOK {
		t.Fatalf("submit --build-wheel 'dist/*.whl': exit %d\n%s\n%s", code, out, errOut)
	}
	if w := queuedJob(t, js, "pattern").Source.Wheels; len(w) != 2 || w[0].URL != keyA || w[1].URL != keyB {
		t.Errorf("the pattern's job names %+v, want %s and %s", w, keyA, keyB)
	}
	code, out, errOut = run(t, wheelSubmit(srv.ClientURL(), store, "expanded",
		"--build-wheel", filepath.Join(dist, "a-1.0-py3-none-any.whl"), filepath.Join(dist, "b-2.0-py3-none-any.whl"))...)
	if code != cli.ExitOK {
		t.Fatalf("submit --build-wheel a.whl b.whl: exit %d\n%s\n%s", code, out, errOut)
	}
	if w := queuedJob(t, js, "expanded").Source.Wheels; len(w) != 2 || w[1].URL != keyB {
		t.Errorf("the expanded pattern's job names %+v, want %s and %s", w, keyA, keyB)
	}
	// A wheel named by its key, now in the store.
	code, out, errOut = run(t, wheelSubmit(srv.ClientURL(), store, "by-key", "--wheel", keyB)...)
	if code != cli.ExitOK {
		t.Fatalf("submit --wheel KEY: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "in the store at "+keyB) {
		t.Errorf("submit --wheel does not say it found the key:\n%s", errOut)
	}
	if w := queuedJob(t, js, "by-key").Source.Wheels; len(w) != 1 || w[0] != (protocol.Wheel{URL: keyB, SHA256: sumB}) {
		t.Errorf("the --wheel job names %+v, want %s with sha256 %s", w, keyB, sumB)
	}
	// The matrix's source.wheels, the same.
	matrix := filepath.Join(t.TempDir(), "perf.yaml")
	if err := os.WriteFile(matrix, []byte("source: {wheels: [{url: "+keyA+", sha256: "+sumA+"}]}\n"+
		"defaults: {pool: n150, benchmark: {test: 'forge/test/benchmark/test_vision.py::test_resnet50', model: resnet50, batch_size: 8, loop_count: 32}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "submit", "--nats", srv.ClientURL(), "--store", store, "--matrix", matrix,
		"--repo", "acme/forge", "--commit", wheelCommit, "--run", "matrix-wheels")
	if code != cli.ExitOK {
		t.Fatalf("submit --matrix with source.wheels: exit %d\n%s\n%s", code, out, errOut)
	}
	if w := queuedJob(t, js, "matrix-wheels").Source.Wheels; len(w) != 1 || w[0].URL != keyA {
		t.Errorf("the matrix's job names %+v, want %s", w, keyA)
	}
}

// A wheel named by a key the store does not hold is refused before
// anything is published, naming the key.
func TestSubmitWheelKeyNotInStore(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	sum := strings.Repeat("ab", 32)
	key := protocol.BuildKey(sum, wheelName)
	code, out, errOut := run(t, wheelSubmit(srv.ClientURL(), "file://"+t.TempDir(), "missing-key", "--wheel", key)...)
	if code != cli.ExitUsage {
		t.Fatalf("submit --wheel of a missing key: exit %d, want %d\n%s\n%s", code, cli.ExitUsage, out, errOut)
	}
	if !strings.Contains(errOut, key) || !strings.Contains(errOut, "not in the store") {
		t.Errorf("the message does not name the missing key %s:\n%s", key, errOut)
	}
	if st, err := js.Stream(t.Context(), protocol.StreamJobs); err == nil {
		if info, err := st.Info(t.Context()); err == nil && info.State.Msgs != 0 {
			t.Errorf("%d jobs published despite the missing wheel", info.State.Msgs)
		}
	}
}

// A store the wheel cannot be written to fails the submit (exit 1) naming
// the key, and publishes nothing.
func TestSubmitBuildWheelStoreNotWritable(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	dir := t.TempDir()
	// builds/ is a file: no key under it can be written (also as root).
	if err := os.WriteFile(filepath.Join(dir, "builds"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, sum := makeWheel(t, t.TempDir(), wheelName, "1")
	code, out, errOut := run(t, wheelSubmit(srv.ClientURL(), "file://"+dir, "unwritable", "--build-wheel", path)...)
	if code != cli.ExitFailed {
		t.Fatalf("submit to an unwritable store: exit %d, want %d\n%s\n%s", code, cli.ExitFailed, out, errOut)
	}
	if key := protocol.BuildKey(sum, wheelName); !strings.Contains(errOut, key) || !strings.Contains(errOut, "nothing was published") {
		t.Errorf("the message does not name the key %s:\n%s", key, errOut)
	}
	if st, err := js.Stream(t.Context(), protocol.StreamJobs); err == nil {
		if info, err := st.Info(t.Context()); err == nil && info.State.Msgs != 0 {
			t.Errorf("%d jobs published though the wheel was not stored", info.State.Msgs)
		}
	}
}

// Bad wheels and a source they cannot run with are usage errors (exit 64)
// naming the file, key or flag, before anything is connected to.
func TestSubmitWheelBadInputExits64NamingIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, _ := makeWheel(t, dir, wheelName, "1")
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("PK\x03\x04 not a wheel"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake-1.0-py3-none-any.whl")
	if err := os.WriteFile(fake, []byte("just text"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "gone-1.0-py3-none-any.whl")
	base := func(extra ...string) []string {
		return append([]string{"submit", "--store", "file://" + dir, "--pool", "n150", "--test", "forge/test/benchmark/test_vision.py::test_resnet50",
			"--model", "resnet50", "--batch-size", "8", "--loop-count", "32"}, extra...)
	}
	src := []string{"--repo", "acme/forge", "--commit", wheelCommit}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"not a wheel name", base(append(src, "--build-wheel", notes)...), []string{notes, "PEP 427"}},
		{"not a zip", base(append(src, "--build-wheel", fake)...), []string{fake, "not a zip archive"}},
		{"missing file", base(append(src, "--build-wheel", missing)...), []string{missing, "no such file"}},
		{"pattern matching nothing", base(append(src, "--build-wheel", filepath.Join(dir, "*.tar.gz"))...), []string{"*.tar.gz", "no file matches"}},
		{"stray argument", base(append(src, "--build-wheel", good, "extra.txt")...), []string{"extra.txt"}},
		{"short commit", base("--repo", "acme/forge", "--commit", "0123456", "--build-wheel", good),
			[]string{`--commit "0123456"`, "full 40-hex-digit commit", "test tree"}},
		{"no commit", base("--repo", "acme/forge", "--commit=", "--build-wheel", good), []string{"need --commit", "40-hex-digit"}},
		{"no repo", base("--repo=", "--commit", wheelCommit, "--build-wheel", good), []string{"need --repo"}},
		{"no store", []string{"submit", "--store=", "--pool", "n150", "--test", "forge/test/benchmark/test_vision.py::test_resnet50",
			"--model", "resnet50", "--batch-size", "8", "--loop-count", "32", "--repo", "acme/forge", "--commit", wheelCommit, "--build-wheel", good},
			[]string{"need --store"}},
		{"bad key", base(append(src, "--wheel", "builds/sha256/xyz/"+wheelName)...), []string{"--wheel", "builds/sha256/xyz/" + wheelName}},
		{"key without a wheel name", base(append(src, "--wheel", protocol.BuildKey(strings.Repeat("ab", 32), "x.zip"))...), []string{"x.zip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := badInputRun(t, tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, cli.ExitUsage, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("message does not name %q:\n%s", w, out)
				}
			}
		})
	}
}
