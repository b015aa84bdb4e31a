package wheels_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

func writeWheel(t *testing.T, dir, name, payload string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("pkg/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(payload))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileBucket(t *testing.T) storage.Bucket {
	t.Helper()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A wheel file whose bytes changed after it was hashed is not stored under
// the key of the old bytes: the upload fails and the key stays free.
func TestStageWheelsRefusesAFileChangedAfterHashing(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	path := writeWheel(t, t.TempDir(), "pkg-1.0-py3-none-any.whl", "v1")
	wf, err := wheels.ReadWheelFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeWheel(t, filepath.Dir(path), filepath.Base(path), "v2, rebuilt meanwhile")
	err = wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, nil, "", nil)
	if err == nil || !strings.Contains(err.Error(), "changed while it was submitted") || !strings.Contains(err.Error(), wf.Key()) {
		t.Fatalf("StageWheels of a changed file: %v, want an error naming %s", err, wf.Key())
	}
	if ok, err := b.Exists(t.Context(), wf.Key()); err != nil || ok {
		t.Errorf("the key of the old bytes holds an object (%v, %v)", ok, err)
	}
}

// An object of another size at a wheel's key is not that wheel: staging
// fails naming the key and leaves the object alone.
func TestStageWheelsSizeMismatchNamesTheKey(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	wf, err := wheels.ReadWheelFile(writeWheel(t, t.TempDir(), "pkg-1.0-py3-none-any.whl", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(t.Context(), wf.Key(), strings.NewReader("partial")); err != nil {
		t.Fatal(err)
	}
	var events []wheels.WheelEvent
	err = wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, nil, "", func(e wheels.WheelEvent) { events = append(events, e) })
	if err == nil || !strings.Contains(err.Error(), wf.Key()) || !strings.Contains(err.Error(), "7 bytes") {
		t.Fatalf("StageWheels over a damaged object: %v, want an error naming %s and its size", err, wf.Key())
	}
	if len(events) != 0 {
		t.Errorf("progress %+v for a wheel that was not staged", events)
	}
	rc, err := b.Get(t.Context(), wf.Key())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got bytes.Buffer
	got.ReadFrom(rc)
	if got.String() != "partial" {
		t.Errorf("the object at %s was replaced", wf.Key())
	}
}

// A job's wheel named by key must be in the store: the error matches
// ErrWheelMissing and names the key and the job.
func TestStageWheelsMissingKey(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	sum := strings.Repeat("0f", 32)
	w := protocol.Wheel{URL: protocol.BuildKey(sum, "pkg-1.0-py3-none-any.whl"), SHA256: sum}
	job := &protocol.Job{ID: "j0123", Source: protocol.Source{Wheels: []protocol.Wheel{w}}}
	err := wheels.StageWheels(t.Context(), b, nil, []*protocol.Job{job}, "", nil)
	if !errors.Is(err, wheels.ErrWheelMissing) || !strings.Contains(err.Error(), w.URL) || !strings.Contains(err.Error(), "j0123") {
		t.Fatalf("StageWheels of a missing key: %v, want ErrWheelMissing naming %s and the job", err, w.URL)
	}
	if err := b.Put(t.Context(), w.URL, strings.NewReader("PK\x03\x04")); err != nil {
		t.Fatal(err)
	}
	if err := wheels.StageWheels(t.Context(), b, nil, []*protocol.Job{job}, "", nil); err != nil {
		t.Errorf("StageWheels of a key in the store: %v", err)
	}
}

// Wheel keys and file names are read strictly (table).
func TestParseWheelKey(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{protocol.BuildKey(sum, "pkg-1.0-py3-none-any.whl"), true},
		{protocol.BuildKey(sum, "pkg-1.0-1-cp310-cp310-linux_x86_64.whl"), true},
		{protocol.BuildKey(strings.ToUpper(sum), "pkg-1.0-py3-none-any.whl"), false},
		{protocol.BuildKey(sum[:63], "pkg-1.0-py3-none-any.whl"), false},
		{protocol.BuildKey(sum, "pkg.whl"), false},
		{protocol.BuildKey(sum, "pkg-1.0-py3-none-any.zip"), false},
		{protocol.BuildKey(sum, "x/pkg-1.0-py3-none-any.whl"), false},
		{"results/v1/" + sum + "/pkg-1.0-py3-none-any.whl", false},
		{"", false},
	} {
		w, err := wheels.ParseWheelKey(tc.key)
		if tc.ok != (err == nil) {
			t.Errorf("ParseWheelKey(%q) = %v, want ok %v", tc.key, err, tc.ok)
			continue
		}
		if tc.ok && (w.URL != tc.key || w.SHA256 != sum) {
			t.Errorf("ParseWheelKey(%q) = %+v", tc.key, w)
		}
		if !tc.ok && !errors.Is(err, wheels.ErrBadWheel) {
			t.Errorf("ParseWheelKey(%q): %v does not match ErrBadWheel", tc.key, err)
		}
	}
}
