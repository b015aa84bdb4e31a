package bisect_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/internal/buildkit"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/bisect"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// marks parses a row of marks: . untested, g good, b bad, s skip.
func marks(s string) []bisect.Mark {
	out := make([]bisect.Mark, len(s))
	for i, c := range s {
		out[i] = map[rune]bisect.Mark{'.': bisect.Untested, 'g': bisect.MarkGood, 'b': bisect.MarkBad, 's': bisect.MarkSkip}[c]
	}
	return out
}

// The narrowing: the probe is the untested commit nearest the middle of
// the range between the last good commit and the first bad one; skipped
// commits are stepped around; with only skipped commits left the first bad
// commit is one of them or the first bad.
func TestNarrow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		marks      string
		probe      int
		firstBad   int
		candidates []int
		left       int
	}{
		{"16 commits, only the bad end known", "...............b", 7, -1, nil, 4},
		{"the 8th good", ".......g.......b", 11, -1, nil, 3},
		{"the 12th bad", ".......g...b...b", 9, -1, nil, 2},
		{"the 10th good", ".......g.g.b...b", 10, -1, nil, 1},
		{"found: the 11th", ".......g.gbb...b", -1, 10, nil, 0},
		{"one commit, the bad one", "b", -1, 0, nil, 0},
		{"two commits", ".b", 0, -1, nil, 1},
		{"the first commit is the first bad", "b..b", -1, 0, nil, 0},
		{"a skipped midpoint: the older neighbour", ".......s.......b", 6, -1, nil, 4},
		{"a skipped midpoint and older one: the newer", "......ss.......b", 8, -1, nil, 4},
		{"a run of skips around the middle", ".....sssss.....b", 4, -1, nil, 4},
		{"only skips left between good and bad", "ggssb", -1, -1, []int{2, 3, 4}, 0},
		{"a skip just before the first bad", "gsb", -1, -1, []int{1, 2}, 0},
		{"every commit but the bad one skipped", "sssb", -1, -1, []int{0, 1, 2, 3}, 0},
		{"an inconsistent good after the first bad is ignored", "..b.g.b", 0, -1, nil, 2},
		{"no bad commit: nothing to find", "....", -1, -1, nil, 0},
		{"empty", "", -1, -1, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := bisect.Narrow(marks(c.marks))
			if got.Probe != c.probe || got.FirstBad != c.firstBad || !slices.Equal(got.Candidates, c.candidates) || got.Left != c.left {
				t.Errorf("Narrow(%q) = %+v, want probe %d first bad %d candidates %v left %d", c.marks, got, c.probe, c.firstBad, c.candidates, c.left)
			}
		})
	}
}

// Played out, the narrowing names a planted first bad commit within
// ceil(log2 n) probes for every place it may be and every n up to 64, and
// a skipped commit costs at most one probe more.
func TestNarrowFindsEveryPlantedCommit(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 64; n++ {
		for bad := range n {
			for _, skip := range []int{-1, n / 2, bad - 1} {
				if skip == n-1 || skip == bad {
					continue
				}
				m := make([]bisect.Mark, n)
				m[n-1] = bisect.MarkBad
				if skip >= 0 {
					m[skip] = bisect.MarkSkip
				}
				limit := bisect.Narrow(m).Left
				probes := 0
				for {
					nw := bisect.Narrow(m)
					if nw.Probe < 0 {
						switch {
						case nw.FirstBad == bad:
						case skip == bad-1 && slices.Equal(nw.Candidates, []int{skip, bad}):
						default:
							t.Fatalf("n %d bad %d skip %d: %+v, want first bad %d", n, bad, skip, nw, bad)
						}
						break
					}
					probes++
					if nw.Probe >= bad {
						m[nw.Probe] = bisect.MarkBad
					} else {
						m[nw.Probe] = bisect.MarkGood
					}
				}
				if probes > limit+1 || (skip < 0 && probes > limit) {
					t.Fatalf("n %d bad %d skip %d: %d probes, want at most %d", n, bad, skip, probes, limit)
				}
			}
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    float64
		want bisect.Mark
	}{{100, bisect.MarkGood}, {80, bisect.MarkGood}, {75, bisect.MarkGood}, {74.9, bisect.MarkBad}, {50, bisect.MarkBad}, {40, bisect.MarkBad}} {
		if got := bisect.Classify(c.v, 100, 50); got != c.want {
			t.Errorf("Classify(%v, good 100, bad 50) = %s, want %s", c.v, got, c.want)
		}
	}
}

// The range from a real git repository: the commits after good up to bad,
// oldest first, good and bad given abbreviated; a bad commit that is not a
// descendant of good, and a malformed commit, are input errors.
func TestGitRange(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("no git")
	}
	var commits []map[string]string
	for i := range 6 {
		commits = append(commits, map[string]string{fmt.Sprintf("f%d", i): "x"})
	}
	dir, ids, err := buildkit.MakeRepo(t.TempDir(), commits...)
	if err != nil {
		t.Fatal(err)
	}
	good, bad, got, err := bisect.GitRange(t.Context(), dir, ids[1][:8], ids[5][:10])
	if err != nil {
		t.Fatal(err)
	}
	if good != ids[1] || bad != ids[5] || !slices.Equal(got, ids[2:6]) {
		t.Fatalf("GitRange = %s %s %v, want %s %s %v", good, bad, got, ids[1], ids[5], ids[2:6])
	}
	for _, c := range []struct{ good, bad, want string }{
		{ids[4], ids[2], "no commits between"},
		{"--all", ids[2], "want a commit in lowercase hex"},
		{"deadbeef", ids[2], "not a commit of"},
	} {
		if _, _, _, err := bisect.GitRange(t.Context(), dir, c.good, c.bad); !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("GitRange(%s, %s) = %v, want an input error saying %q", c.good, c.bad, err, c.want)
		}
	}
}

func TestListRange(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("abcd%d%035x", i, i))
	}
	list := []byte("# main, oldest first\n" + strings.Join(ids, "\n") + "\n\n")
	good, bad, got, err := bisect.ListRange(list, ids[0][:5], ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if good != ids[0] || bad != ids[3] || !slices.Equal(got, ids[1:4]) {
		t.Fatalf("ListRange = %s %s %v, want %v", good, bad, got, ids[1:4])
	}
	for _, c := range []struct {
		list      string
		good, bad string
		want      string
	}{
		{string(list), ids[3], ids[1], "no commits between"},
		{string(list), "abcd", ids[1], "more than one listed commit"},
		{string(list), "f00d", ids[1], "not in the list"},
		{"abc\n", "abc", "abc", "want a full commit"},
	} {
		if _, _, _, err := bisect.ListRange([]byte(c.list), c.good, c.bad); !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ListRange(%s, %s) = %v, want an input error saying %q", c.good, c.bad, err, c.want)
		}
	}
	if _, _, _, err := bisect.BisectRange(t.Context(), "", filepath.Join(t.TempDir(), "none"), "abcd", "bcde"); !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), "none") {
		t.Errorf("BisectRange of a missing file: %v, want an input error", err)
	}
	if _, _, _, err := bisect.BisectRange(t.Context(), "", "", "abcd", "bcde"); !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), "--mirror") {
		t.Errorf("BisectRange of neither: %v, want an input error naming --mirror", err)
	}
}

func TestBisectRoundLine(t *testing.T) {
	t.Parallel()
	c := strings.Repeat("3f2a9c01b4de", 4)[:40]
	for _, r := range []struct {
		round bisect.BisectRound
		want  string
	}{
		{bisect.BisectRound{N: 2, Of: 5, Commits: 16, Probes: []bisect.BisectProbe{{Commit: c, Index: 8, Median: 123.44, Mark: bisect.MarkBad}}},
			"round 2/5: commit 3f2a9c01b4de (8 of 16) 123.4 samples/s -> bad"},
		{bisect.BisectRound{N: 1, Of: 5, Commits: 16, Probes: []bisect.BisectProbe{{Commit: c, Median: 200}, {Commit: c, Index: 16, Median: 100}}},
			"round 1/5: good 3f2a9c01b4de 200.0 samples/s, bad 3f2a9c01b4de (16 of 16) 100.0 samples/s (-50.0%)"},
		{bisect.BisectRound{N: 3, Of: 6, Commits: 16, Probes: []bisect.BisectProbe{{Commit: c, Index: 4, Mark: bisect.MarkSkip, Reason: "none of its 3 attempts passed"}}},
			"round 3/6: commit 3f2a9c01b4de (4 of 16) -> skip: none of its 3 attempts passed"},
	} {
		if got := r.round.String(); got != r.want {
			t.Errorf("round line\n got %q\nwant %q", got, r.want)
		}
	}
}

// A bisect checks its jobs as submit does before it reads a build record
// or publishes anything: a series of the sim runner, which installs no
// wheels, cannot measure a commit's build, and the bisect refuses it as
// bad input with the runner's reason and nothing queued (the worker would
// dead-letter every attempt). A sim series has no build records (what a
// user meets): the refusal comes before they are looked for, not "no
// stored build"; with records it is the same.
func TestBisectRefusesARunnerThatInstallsNoWheels(t *testing.T) {
	t.Parallel()
	for _, records := range []bool{false, true} {
		t.Run(fmt.Sprintf("build records %v", records), func(t *testing.T) {
			t.Parallel()
			f := fleettest.New(t, fleettest.Options{})
			good, bad := strings.Repeat("a", 40), strings.Repeat("b", 40)
			if records {
				path, _, err := buildkit.WriteWheel(t.TempDir(), "forge", "1.0", map[string]string{"forge/__init__.py": "fast"})
				if err != nil {
					t.Fatal(err)
				}
				wf, err := wheels.ReadWheelFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := wheels.StageWheels(t.Context(), f.Store, []wheels.WheelFile{wf}, nil, "", nil); err != nil {
					t.Fatal(err)
				}
				for _, c := range []string{good, bad} {
					if _, err := wheels.WriteBuildRecord(t.Context(), f.Store, &wheels.BuildRecord{Repo: "o/r", Commit: c, Wheels: []protocol.Wheel{wf.Wheel()}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			now := time.Now().UTC()
			r := &protocol.Result{Schema: protocol.SchemaResult, Job: "j000000000000001", Run: "ci-bad", RunCreatedAt: now,
				Pool: "sim", Runner: "sim", Status: protocol.StatusPassed, Attempt: 1, StartedAt: now, FinishedAt: now.Add(time.Second),
				Benchmark: protocol.Benchmark{Model: "simnet", BatchSize: 4, LoopCount: 10, WarmupCount: 4, DataFormat: "bfloat16"},
				Source:    protocol.Source{Repo: "o/r", Commit: bad, Branch: "main"}, Measurements: protocol.Measurements{SamplesPerSec: 100}}
			if _, err := storage.PutResult(t.Context(), f.Store, r); err != nil {
				t.Fatal(err)
			}
			b := &bisect.Bisector{Submitter: &submit.Submitter{JS: f.JS, Runs: f.Topo.Runs, Jobs: f.Topo.Jobs, Store: f.Store}}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a bisect that published waits for results no worker makes
			defer cancel()
			_, err := b.Bisect(ctx, bisect.BisectConfig{Series: gate.Series{Model: "simnet", BatchSize: 4, DataFormat: "bfloat16", Pool: "sim"},
				Good: good, Bad: bad, Commits: []string{bad}, Repeats: 2})
			if !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), "the sim runner") || !strings.Contains(err.Error(), "installs no wheels") {
				t.Fatalf("bisect of a sim series: %v, want an input error saying the sim runner installs no wheels", err)
			}
			st, err := f.JS.Stream(t.Context(), protocol.StreamJobs)
			if err != nil {
				t.Fatal(err)
			}
			if info, err := st.Info(t.Context()); err != nil || info.State.Msgs != 0 {
				t.Fatalf("jobs queued after a refused bisect: %+v %v, want none", info.State, err)
			}
		})
	}
}

// Bad input names what is wrong: a missing flag is required, not a bad
// commit; both sources is "not both"; a mirror that is not there is
// missing; a data format other than submit's is refused.
func TestBisectInputErrors(t *testing.T) {
	t.Parallel()
	list := filepath.Join(t.TempDir(), "commits")
	if err := os.WriteFile(list, []byte(strings.Repeat("a", 40)+"\n"+strings.Repeat("b", 40)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notGit := t.TempDir()
	for _, c := range []struct{ mirror, list, good, bad, want string }{
		{"", list, "", "bbbb", "--good is required"},
		{"", list, "aaaa", "", "--bad is required"},
		{notGit, list, "aaaa", "bbbb", "give one of --mirror DIR or --commits FILE, not both"},
		{"", "", "aaaa", "bbbb", "give --mirror DIR"},
		{filepath.Join(notGit, "none"), "", "aaaa", "bbbb", "--mirror " + filepath.Join(notGit, "none") + ": no such folder"},
		{list, "", "aaaa", "bbbb", "--mirror " + list + ": not a folder"},
		{notGit, "", "aaaa", "bbbb", "not a git repository"},
	} {
		_, _, _, err := bisect.BisectRange(t.Context(), c.mirror, c.list, c.good, c.bad)
		if !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("BisectRange(%q, %q, %q, %q) = %v, want an input error saying %q", c.mirror, c.list, c.good, c.bad, err, c.want)
		}
	}
	cfg := bisect.BisectConfig{Series: gate.Series{Model: "resnet50", BatchSize: 8, DataFormat: "bf16", Pool: "n150"},
		Good: strings.Repeat("a", 40), Bad: strings.Repeat("b", 40), Commits: []string{strings.Repeat("b", 40)}}
	if err := cfg.Check(); !errors.Is(err, bisect.ErrBisectInput) || !strings.Contains(err.Error(), `--data-format "bf16": want float32 or bfloat16`) {
		t.Errorf("Check of --data-format bf16: %v, want an input error naming the flag", err)
	}
}

// A long line of a commit list is cut in its error on a rune boundary:
// the message stays valid UTF-8.
func TestBisectInputErrorCutsOnARune(t *testing.T) {
	t.Parallel()
	_, _, _, err := bisect.ListRange([]byte("a"+strings.Repeat("é", 100)+"\n"), "aaaa", "bbbb")
	if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "…") {
		t.Fatalf("ListRange of a long non-ASCII line: %q, want an error cut with an ellipsis in valid UTF-8", err)
	}
}
