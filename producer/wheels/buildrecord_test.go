package wheels_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

const (
	commitA = "1111111111111111111111111111111111111111"
	commitB = "2222222222222222222222222222222222222222"
)

func wheelOf(t *testing.T, b storage.Bucket, name, payload string) wheels.WheelFile {
	t.Helper()
	wf, err := wheels.ReadWheelFile(writeWheel(t, t.TempDir(), name, payload))
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
	job := func(commit string, w wheels.WheelFile) *protocol.Job {
		return &protocol.Job{ID: "j1", Source: protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit, Branch: "main", Wheels: []protocol.Wheel{w.Wheel()}}}
	}
	var events []wheels.WheelEvent
	progress := func(e wheels.WheelEvent) { events = append(events, e) }
	if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, []*protocol.Job{job(commitA, wf)}, "", progress); err != nil {
		t.Fatal(err)
	}
	rec, err := wheels.ReadBuildRecord(t.Context(), b, commitA)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Repo != "tenstorrent/tt-forge-onnx" || rec.Commit != commitA || len(rec.Wheels) != 1 || rec.Wheels[0] != wf.Wheel() {
		t.Fatalf("record %+v, want commit A's one wheel %+v", rec, wf.Wheel())
	}
	if last := events[len(events)-1]; last.State != wheels.BuildRecorded || last.Name != commitA || last.Key != "builds/commits/"+commitA+".json" {
		t.Fatalf("last event %+v, want the record written", last)
	}

	// The same build again: no change, no error.
	events = nil
	if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, []*protocol.Job{job(commitA, wf)}, "", progress); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.State == wheels.BuildRecorded || e.State == wheels.BuildRecordKept {
			t.Fatalf("the same build again: event %+v", e)
		}
	}
	// A rebuild with other bytes: staged, but the record keeps the first.
	other := wheelOf(t, b, "forge-1.0-py3-none-any.whl", "rebuilt")
	events = nil
	if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{other}, []*protocol.Job{job(commitA, other)}, "", progress); err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.State != wheels.BuildRecordKept {
		t.Fatalf("another build of the commit: last event %+v, want record-kept", last)
	}
	if rec, err := wheels.ReadBuildRecord(t.Context(), b, commitA); err != nil || rec.Wheels[0] != wf.Wheel() {
		t.Fatalf("record after a rebuild: %+v %v, want the first build", rec, err)
	}
	if _, err := wheels.WriteBuildRecord(t.Context(), b, &wheels.BuildRecord{Repo: "r", Commit: commitA, Wheels: []protocol.Wheel{other.Wheel()}}); !errors.Is(err, wheels.ErrBuildRecorded) {
		t.Fatalf("WriteBuildRecord of another build: %v, want ErrBuildRecorded", err)
	}

	// No commit, or an abbreviated one: nothing recorded.
	if err := wheels.StageWheels(t.Context(), b, nil, []*protocol.Job{job("", wf), job("2222222", wf)}, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wheels.ReadBuildRecord(t.Context(), b, commitB); !errors.Is(err, wheels.ErrNoBuild) {
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

// Only a build of the baseline branch is recorded (main by default, else
// the branch given): a pull request's or a fork's wheels of a commit are
// not the commit's build, and the submit says so.
func TestStageWheelsRecordsOnlyTheBaselineBranch(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	wf := wheelOf(t, b, "forge-1.0-py3-none-any.whl", "pr build")
	job := func(commit, branch string) *protocol.Job {
		return &protocol.Job{ID: "j1", Source: protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit, Branch: branch, Wheels: []protocol.Wheel{wf.Wheel()}}}
	}
	for _, c := range []struct{ commit, branch, baseline string }{{commitA, "feature/x", ""}, {commitA, "", ""}, {commitB, "main", "release"}} {
		var events []wheels.WheelEvent
		if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, []*protocol.Job{job(c.commit, c.branch)}, c.baseline, func(e wheels.WheelEvent) { events = append(events, e) }); err != nil {
			t.Fatal(err)
		}
		if _, err := wheels.ReadBuildRecord(t.Context(), b, c.commit); !errors.Is(err, wheels.ErrNoBuild) {
			t.Errorf("branch %q, baseline %q: record %v, want none", c.branch, c.baseline, err)
		}
		last := events[len(events)-1]
		if last.State != wheels.BuildNotRecorded || !strings.Contains(last.String(), "not the baseline branch "+cmp.Or(c.baseline, "main")) {
			t.Errorf("branch %q, baseline %q: last event %+v %q, want not-recorded naming the baseline branch", c.branch, c.baseline, last, last.String())
		}
	}
	if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, []*protocol.Job{job(commitB, "release")}, "release", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wheels.ReadBuildRecord(t.Context(), b, commitB); err != nil {
		t.Errorf("a build of the baseline branch release: %v, want it recorded", err)
	}
}

// putFails fails every Put under prefix, as a store that refuses writes.
type putFails struct {
	storage.Bucket
	prefix string
}

func (p putFails) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	if strings.HasPrefix(key, p.prefix) {
		return errors.New("503 slow down")
	}
	return p.Bucket.Put(ctx, key, r, opts...)
}

// Recording a build is best effort: a store error writing the record is
// reported and the wheels stay staged (the submit goes on); a record that
// is not a valid one is kept, as another build's would be.
func TestBuildRecordingIsBestEffort(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	wf := wheelOf(t, b, "forge-1.0-py3-none-any.whl", "fast")
	job := func(commit string) []*protocol.Job {
		return []*protocol.Job{{ID: "j1", Source: protocol.Source{Repo: "tenstorrent/tt-forge-onnx", Commit: commit, Branch: "main", Wheels: []protocol.Wheel{wf.Wheel()}}}}
	}
	var events []wheels.WheelEvent
	progress := func(e wheels.WheelEvent) { events = append(events, e) }
	if err := wheels.StageWheels(t.Context(), putFails{b, "builds/commits/"}, []wheels.WheelFile{wf}, job(commitA), "", progress); err != nil {
		t.Fatalf("StageWheels with a failing record write: %v, want the submit to go on", err)
	}
	if ok, err := b.Exists(t.Context(), wf.Key()); err != nil || !ok {
		t.Fatalf("the wheel after a failed record write: %v %v, want it staged", ok, err)
	}
	if last := events[len(events)-1]; last.State != wheels.BuildRecordFailed || !strings.Contains(last.String(), "503 slow down") || !strings.Contains(last.String(), "the submit goes on") {
		t.Fatalf("last event %+v %q, want record-failed with the store's error", last, last.String())
	}

	if err := b.Put(t.Context(), wheels.BuildRecordKey(commitB), strings.NewReader(`{"schema": "something else"}`)); err != nil {
		t.Fatal(err)
	}
	events = nil
	if err := wheels.StageWheels(t.Context(), b, []wheels.WheelFile{wf}, job(commitB), "", progress); err != nil {
		t.Fatalf("StageWheels over a bad record: %v, want it kept and the submit to go on", err)
	}
	if last := events[len(events)-1]; last.State != wheels.BuildRecordKept || !strings.Contains(last.Reason, "not a valid record") {
		t.Fatalf("last event %+v, want record-kept saying the record is not valid", last)
	}
	if _, err := wheels.WriteBuildRecord(t.Context(), b, &wheels.BuildRecord{Repo: "r", Commit: commitB, Wheels: []protocol.Wheel{wf.Wheel()}}); !errors.Is(err, wheels.ErrBuildRecorded) {
		t.Fatalf("WriteBuildRecord over a bad record: %v, want ErrBuildRecorded", err)
	}
}

// Every record event is a line for people.
func TestWheelEventStringOfRecords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    wheels.WheelEvent
		want string
	}{
		{wheels.WheelEvent{Name: commitA, Key: wheels.BuildRecordKey(commitA), State: wheels.BuildRecorded},
			"build of commit 111111111111: recorded at builds/commits/" + commitA + ".json (a bisect measures it)"},
		{wheels.WheelEvent{Name: commitA, State: wheels.BuildRecordKept, Reason: "another record is kept: x names another build of the commit (a.whl)"},
			"build of commit 111111111111: not recorded: another record is kept: x names another build of the commit (a.whl) (a bisect measures the recorded one)"},
		{wheels.WheelEvent{Name: commitA, State: wheels.BuildNotRecorded, Reason: `branch "pr" is not the baseline branch main`},
			`build of commit 111111111111: not recorded: branch "pr" is not the baseline branch main (a bisect measures baseline builds only)`},
		{wheels.WheelEvent{Name: commitA, State: wheels.BuildRecordFailed, Reason: "503"},
			"build of commit 111111111111: not recorded: 503 (the submit goes on; a bisect will skip the commit)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.e.State, got, c.want)
		}
	}
}

// A record is read strictly: what is not a valid record of the commit
// asked for is an error matching ErrBadBuildRecord.
func TestReadBuildRecordIsStrict(t *testing.T) {
	t.Parallel()
	b := fileBucket(t)
	w := protocol.Wheel{URL: protocol.BuildKey(strings.Repeat("a", 64), "forge-1.0-py3-none-any.whl"), SHA256: strings.Repeat("a", 64)}
	if _, err := wheels.WriteBuildRecord(t.Context(), b, &wheels.BuildRecord{Repo: "tenstorrent/tt-forge-onnx", Commit: commitA, Wheels: []protocol.Wheel{w}}); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Get(t.Context(), wheels.BuildRecordKey(commitA))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := io.ReadAll(rc)
	rc.Close()
	if _, err := wheels.DecodeBuildRecord(good, commitA); err != nil {
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
		_, err := wheels.DecodeBuildRecord([]byte(c.doc), commitA)
		if !errors.Is(err, wheels.ErrBadBuildRecord) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a bad record naming %q", c.name, err, c.want)
		}
	}
	if _, err := wheels.DecodeBuildRecord(good, commitB); !errors.Is(err, wheels.ErrBadBuildRecord) || !strings.Contains(err.Error(), "record of commit "+commitA) {
		t.Errorf("commit A's record read as B's: %v", err)
	}
}
