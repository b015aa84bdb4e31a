package producer_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

const (
	commitA = "1111111111111111111111111111111111111111"
	commitB = "2222222222222222222222222222222222222222"
)

func wheelOf(t *testing.T, b storage.Bucket, name, payload string) producer.WheelFile {
	t.Helper()
	wf, err := producer.ReadWheelFile(writeWheel(t, t.TempDir(), name, payload))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// Staging the wheels of a commit's jobs records them as the commit's
// build, once: the same build again changes nothing, another build of the
// commit is kept out (the first stays) and said; jobs without a commit
// record nothing.
func TestStageWheelsRecordsTheCommitsBuild(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	wf := wheelOf(t, b, "forge-1.0-py3-none-any.whl", "fast")
	job := func(commit string, w producer.WheelFile) *protocol.Job {
		return &protocol.Job{ID: "j1", Source: protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit, Wheels: []protocol.Wheel{w.Wheel()}}}
	}
	var events []producer.WheelEvent
	progress := func(e producer.WheelEvent) { events = append(events, e) }
	if err := producer.StageWheels(t.Context(), b, []producer.WheelFile{wf}, []*protocol.Job{job(commitA, wf)}, progress); err != nil {
		t.Fatal(err)
	}
	rec, err := producer.ReadBuildRecord(t.Context(), b, commitA)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Repo != "tenstorrent/tt-forge-onnx" || rec.Commit != commitA || len(rec.Wheels) != 1 || rec.Wheels[0] != wf.Wheel() {
		t.Fatalf("record %+v, want commit A's one wheel %+v", rec, wf.Wheel())
	}
	if last := events[len(events)-1]; last.State != producer.BuildRecorded || last.Name != commitA || last.Key != "builds/commits/"+commitA+".json" {
		t.Fatalf("last event %+v, want the record written", last)
	}

	// The same build again: no change, no error.
	events = nil
	if err := producer.StageWheels(t.Context(), b, []producer.WheelFile{wf}, []*protocol.Job{job(commitA, wf)}, progress); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.State == producer.BuildRecorded || e.State == producer.BuildRecordKept {
			t.Fatalf("the same build again: event %+v", e)
		}
	}
	// A rebuild with other bytes: staged, but the record keeps the first.
	other := wheelOf(t, b, "forge-1.0-py3-none-any.whl", "rebuilt")
	events = nil
	if err := producer.StageWheels(t.Context(), b, []producer.WheelFile{other}, []*protocol.Job{job(commitA, other)}, progress); err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.State != producer.BuildRecordKept {
		t.Fatalf("another build of the commit: last event %+v, want record-kept", last)
	}
	if rec, err := producer.ReadBuildRecord(t.Context(), b, commitA); err != nil || rec.Wheels[0] != wf.Wheel() {
		t.Fatalf("record after a rebuild: %+v %v, want the first build", rec, err)
	}
	if _, err := producer.WriteBuildRecord(t.Context(), b, &producer.BuildRecord{Repo: "r", Commit: commitA, Wheels: []protocol.Wheel{other.Wheel()}}); !errors.Is(err, producer.ErrBuildRecorded) {
		t.Fatalf("WriteBuildRecord of another build: %v, want ErrBuildRecorded", err)
	}

	// No commit, or an abbreviated one: nothing recorded.
	if err := producer.StageWheels(t.Context(), b, nil, []*protocol.Job{job("", wf), job("2222222", wf)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.ReadBuildRecord(t.Context(), b, commitB); !errors.Is(err, producer.ErrNoBuild) {
		t.Fatalf("a commit never staged: %v, want ErrNoBuild", err)
	}
	var keys []string
	for k, err := range b.List(t.Context(), "builds/commits/") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if len(keys) != 1 {
		t.Fatalf("records %v, want commit A's only", keys)
	}
}

// A record is read strictly: what is not a valid record of the commit
// asked for is an error matching ErrBadBuildRecord.
func TestReadBuildRecordIsStrict(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	w := protocol.Wheel{URL: protocol.BuildKey(strings.Repeat("a", 64), "forge-1.0-py3-none-any.whl"), SHA256: strings.Repeat("a", 64)}
	if _, err := producer.WriteBuildRecord(t.Context(), b, &producer.BuildRecord{Repo: "tenstorrent/tt-forge-onnx", Commit: commitA, Wheels: []protocol.Wheel{w}}); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Get(t.Context(), producer.BuildRecordKey(commitA))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := io.ReadAll(rc)
	rc.Close()
	if _, err := producer.DecodeBuildRecord(good, commitA); err != nil {
		t.Fatalf("the record written: %v", err)
	}
	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", strings.Replace(string(good), `"repo"`, `"extra":1,"repo"`, 1), "unknown field"},
		{"trailing data", string(good) + `{}`, "data after the record"},
		{"another schema", strings.Replace(string(good), "build-record/v1", "build-record/v9", 1), "schema"},
		{"a key that is not a wheel's", strings.Replace(string(good), "builds/sha256/", "elsewhere/", 1), "wheels[0]"},
		{"a sha256 other than the key's", strings.Replace(string(good), `"sha256":"aaaa`, `"sha256":"bbbb`, 1), "wheels[0]"},
		{"no wheels", strings.Replace(string(good), string(good[bytes.Index(good, []byte(`[`)):bytes.LastIndex(good, []byte(`]`))+1]), "[]", 1), "wheels"},
	} {
		_, err := producer.DecodeBuildRecord([]byte(c.doc), commitA)
		if !errors.Is(err, producer.ErrBadBuildRecord) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a bad record naming %q", c.name, err, c.want)
		}
	}
	if _, err := producer.DecodeBuildRecord(good, commitB); !errors.Is(err, producer.ErrBadBuildRecord) || !strings.Contains(err.Error(), "record of commit "+commitA) {
		t.Errorf("commit A's record read as B's: %v", err)
	}
}
