package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

const (
	noteCommit = "0123456789abcdef0123456789abcdef01234567"
	noteSHA    = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	noteWheel  = "tt_forge-0.1.dev1-cp310-cp310-linux_x86_64.whl"
)

// buildRow is a passed row whose result measured build (nil: the result
// says nothing) for a job that named commit and wheels.
func buildRow(job, model string, commit string, wheels []protocol.Wheel, build *protocol.BuildInfo) runstate.Row {
	res := &protocol.Result{Schema: protocol.SchemaResult, Job: job, Run: "ci-notes", Status: protocol.StatusPassed,
		Source: protocol.Source{Repo: "acme/forge", Commit: commit, Wheels: wheels}, Build: build,
		Measurements: protocol.Measurements{SamplesPerSec: 100}, PCC: protocol.PCC{Value: 0.999, Min: 0.99, Passed: true}}
	return runstate.Row{Job: job, Model: model, Pool: "n150", Runner: "forge", BatchSize: 8, DataFormat: "bfloat16",
		Status: protocol.StatusPassed, SamplesPerSec: 100, PCC: 0.999, Result: res}
}

func provisioned(cache string, setup float64) *protocol.BuildInfo {
	return &protocol.BuildInfo{Kind: protocol.BuildProvisioned, Commit: noteCommit, Cache: cache, SetupS: setup,
		Wheels: []protocol.WheelInfo{{Name: noteWheel, SHA256: noteSHA}}}
}

func notesReport(rows ...runstate.Row) *gate.RunReport {
	return &gate.RunReport{Manifest: &protocol.RunManifest{Run: "ci-notes", CreatedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Source: protocol.Source{Repo: "acme/forge", Commit: noteCommit, Branch: "main"}}, Rows: rows}
}

func markdownOf(t *testing.T, r *gate.RunReport) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func tableOf(t *testing.T, rows []runstate.Row) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestBuildText(t *testing.T) {
	t.Parallel()
	wheels := []protocol.Wheel{{URL: protocol.BuildKey(noteSHA, noteWheel), SHA256: noteSHA}}
	for _, tc := range []struct {
		name string
		row  runstate.Row
		want string
	}{
		{"provisioned", buildRow("j", "m", noteCommit, wheels, provisioned(protocol.CacheHit, 1.24)),
			"provisioned 0123456789ab wheels " + noteWheel + "@abcdef012345 (cache hit, setup 1.2 s)"},
		{"host", buildRow("j", "m", noteCommit, nil, &protocol.BuildInfo{Kind: protocol.BuildHost, Commit: noteCommit}), "host's build"},
		{"older worker", buildRow("j", "m", noteCommit, nil, nil), "host's build"},
		{"failed before its build", buildRow("j", "m", noteCommit, wheels, nil), "no build"},
	} {
		if got := BuildText(tc.row.Result); got != tc.want {
			t.Errorf("%s: BuildText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A run whose jobs all measured the commit's provisioned build says so once,
// with the cache outcomes and setup times, and warns of nothing.
func TestMarkdownShowsProvisionedBuild(t *testing.T) {
	t.Parallel()
	wheels := []protocol.Wheel{{URL: protocol.BuildKey(noteSHA, noteWheel), SHA256: noteSHA}}
	r := notesReport(buildRow("j1", "resnet50", noteCommit, wheels, provisioned(protocol.CacheMiss, 45.21)),
		buildRow("j2", "bert", noteCommit, wheels, provisioned(protocol.CacheHit, 0.31)))
	md := markdownOf(t, r)
	want := "\nBuild: provisioned `0123456789ab` wheels `" + noteWheel + "@abcdef012345` (cache 1 hit, 1 miss; setup 0.3–45.2 s).\n"
	if !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
	if strings.Contains(md, "Warning") || strings.Contains(md, "host") {
		t.Errorf("a provisioned run warns:\n%s", md)
	}
	if at, table := strings.Index(md, want), strings.Index(md, "| model"); at > table {
		t.Errorf("the build comes after the table:\n%s", md)
	}
	out := tableOf(t, r.Rows)
	if !strings.Contains(out, "\nbuild: provisioned 0123456789ab wheels "+noteWheel+"@abcdef012345 (cache 1 hit, 1 miss; setup 0.3–45.2 s)\n") ||
		strings.Contains(out, "warning") {
		t.Errorf("terminal summary:\n%s", out)
	}
}

// Jobs that named a commit but ran the host's build (a host result, or a
// result without a build from a worker before builds) are counted in a
// warning that says the verdict is about the host; a job that named wheels
// and ended before its build is "no build", not the host's.
func TestMarkdownWarnsOfHostBuild(t *testing.T) {
	t.Parallel()
	wheels := []protocol.Wheel{{URL: protocol.BuildKey(noteSHA, noteWheel), SHA256: noteSHA}}
	r := notesReport(
		buildRow("j1", "resnet50", noteCommit, wheels, provisioned(protocol.CacheHit, 1.2)),
		buildRow("j2", "bert", noteCommit, nil, &protocol.BuildInfo{Kind: protocol.BuildHost, Commit: noteCommit}),
		buildRow("j3", "mlp", noteCommit, nil, nil),
		buildRow("j4", "vit", noteCommit, wheels, nil),
	)
	md := markdownOf(t, r)
	notice := "> **Warning:** 2 jobs named commit `0123456789ab` but ran the host's installed build: the verdict is about the host, not the commit.\n"
	if !strings.Contains(md, notice) {
		t.Errorf("markdown lacks the host-build warning %q:\n%s", notice, md)
	}
	for _, want := range []string{
		"\nBuilds:\n\n",
		"- provisioned `0123456789ab` wheels `" + noteWheel + "@abcdef012345` (cache hit, setup 1.2 s): `resnet50/n150/bs8/bfloat16`\n",
		"- host's build: `bert/n150/bs8/bfloat16`, `mlp/n150/bs8/bfloat16`\n",
		"- no build: `vit/n150/bs8/bfloat16`\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	out := tableOf(t, r.Rows)
	if !strings.Contains(out, "\nwarning: 2 jobs named commit 0123456789ab but ran the host's installed build: the verdict is about the host, not the commit\n") ||
		!strings.Contains(out, "  host's build: j2, j3\n") {
		t.Errorf("terminal summary:\n%s", out)
	}

	// One job of the host, no commit named: what it measured, no warning.
	r = notesReport(buildRow("j1", "resnet50", "", nil, &protocol.BuildInfo{Kind: protocol.BuildHost}))
	md = markdownOf(t, r)
	if !strings.Contains(md, "\nBuild: host's build.\n") || strings.Contains(md, "Warning") {
		t.Errorf("a host run without a commit:\n%s", md)
	}
	r = notesReport(buildRow("j1", "resnet50", noteCommit, nil, &protocol.BuildInfo{Kind: protocol.BuildHost, Commit: noteCommit}))
	if md := markdownOf(t, r); !strings.Contains(md, "Warning:** 1 job named commit `0123456789ab` but ran") {
		t.Errorf("one host job of a commit:\n%s", md)
	}
}

// Rows without results (a run that timed out before any) name no build.
func TestMarkdownWithoutResultsNamesNoBuild(t *testing.T) {
	t.Parallel()
	md := markdownOf(t, sampleReport(t))
	if strings.Contains(md, "Build") || strings.Contains(md, "Warning") {
		t.Errorf("rows without results name a build:\n%s", md)
	}
}
