package index

import (
	"encoding/json"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// A result's build fills the index's build columns and setup_s; a result
// without one leaves them null.
func TestIndexRowBuildColumns(t *testing.T) {
	t.Parallel()
	r := SynthResult(1, SynthOptions{})
	r.Build = &protocol.BuildInfo{Kind: protocol.BuildProvisioned, Commit: "0123456789abcdef0123456789abcdef01234567",
		Cache: protocol.CacheMiss, SetupS: 12.5}
	r.Phases.SetupS = 12.5
	doc, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	row, err := newIndexRow(r, doc)
	if err != nil {
		t.Fatal(err)
	}
	if row.BuildKind != "provisioned" || row.BuildCommit != r.Build.Commit || row.BuildCache != "miss" || row.SetupS == nil || *row.SetupS != 12.5 {
		t.Errorf("build columns %q %q %q %v, want the result's build", row.BuildKind, row.BuildCommit, row.BuildCache, row.SetupS)
	}
	r.Build, r.Phases.SetupS = nil, 0
	if row, err = newIndexRow(r, doc); err != nil {
		t.Fatal(err)
	}
	if row.BuildKind != "" || row.BuildCommit != "" || row.BuildCache != "" || row.SetupS != nil {
		t.Errorf("a result without a build: columns %q %q %q %v, want null", row.BuildKind, row.BuildCommit, row.BuildCache, row.SetupS)
	}
}
