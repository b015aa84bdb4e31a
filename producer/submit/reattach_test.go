package submit_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/protocol"
)

// A re-submitted run re-attaches only to the run this process was given:
// anyone who may write bench-runs may rewrite a manifest, so a stored
// manifest whose source (project, repo, commit, branch, wheels) differs
// from the submission's, or whose created_at is missing or in the future,
// is refused (ErrRunDiffers, naming what differs and the stored value),
// and nothing is published. The untouched manifest re-attaches.
func TestReattachRefusesRewrittenManifest(t *testing.T) {
	t.Parallel()
	f := fleettest.New(t, fleettest.Options{})
	src := protocol.Source{Project: "tt-forge", Repo: "acme/bench", Commit: "0123456789abcdef0123456789abcdef01234567", Branch: "feature-r"}
	cases := []struct {
		name    string
		rewrite func(m *protocol.RunManifest)
		want    []string // in the error; nil: re-attaches
	}{
		{"untouched", func(*protocol.RunManifest) {}, nil},
		{"another submitter", func(m *protocol.RunManifest) { m.Submitter = "another CI run" }, nil},
		{"repo and commit", func(m *protocol.RunManifest) {
			m.Source.Repo, m.Source.Commit = "evil/repo", "feedfacefeedfacefeedfacefeedfacefeedface"
		}, []string{`source.repo "evil/repo"`, `source.commit "feedfacefeedfacefeedfacefeedfacefeedface"`}},
		{"project", func(m *protocol.RunManifest) { m.Source.Project = "other" }, []string{`source.project "other"`}},
		{"branch", func(m *protocol.RunManifest) { m.Source.Branch = "main" }, []string{`source.branch "main"`}},
		{"wheels", func(m *protocol.RunManifest) {
			m.Source.Wheels = []protocol.Wheel{{URL: "builds/sha256/" + strings.Repeat("ab", 32) + "/forge-1.0-py3-none-any.whl", SHA256: strings.Repeat("ab", 32)}}
		}, []string{"source.wheels: 1 in the run, 0 now"}},
		{"created_at missing", func(m *protocol.RunManifest) { m.CreatedAt = time.Time{} }, []string{"created_at is missing"}},
		{"created_at in the future", func(m *protocol.RunManifest) { m.CreatedAt = time.Now().Add(time.Hour) }, []string{"in the future"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := "reattach-" + strings.ReplaceAll(c.name, " ", "-")
			jobs := fleettest.SimJobs(t, run, 2, nil)
			p := &submit.Submitter{JS: f.JS, Runs: f.Topo.Runs, Jobs: f.Topo.Jobs, Store: f.Store, Log: zerolog.Nop()}
			s := submit.Submission{Run: run, Submitter: "ci", Priority: protocol.PriorityNormal, Source: src, Jobs: jobs}
			if _, err := p.Submit(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			e, err := f.Topo.Runs.Get(t.Context(), protocol.ManifestKey(run))
			if err != nil {
				t.Fatal(err)
			}
			var m protocol.RunManifest
			if err := json.Unmarshal(e.Value(), &m); err != nil {
				t.Fatal(err)
			}
			c.rewrite(&m)
			data, _ := json.Marshal(&m)
			if _, err := f.Topo.Runs.Put(t.Context(), protocol.ManifestKey(run), data); err != nil {
				t.Fatal(err)
			}
			before, _ := f.Pending(t, "sim", protocol.PriorityNormal)
			res, err := p.Submit(t.Context(), s)
			if after, _ := f.Pending(t, "sim", protocol.PriorityNormal); after != before {
				t.Errorf("the second submit published %d jobs", after-before)
			}
			if c.want == nil {
				if err != nil || !res.Attached || res.Published != 0 {
					t.Fatalf("re-submit: %+v, %v; want attached, nothing published", res, err)
				}
				return
			}
			var rd *submit.RunDiffersError
			if !errors.Is(err, submit.ErrRunDiffers) || !errors.As(err, &rd) || rd.Run != run {
				t.Fatalf("re-submit to a rewritten manifest: %v, want a RunDiffersError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}
}
