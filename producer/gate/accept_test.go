package gate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
)

// An acceptance is written once; a record that lies about its key or does
// not validate is skipped with a warning naming it.
func TestAcceptanceIsWriteOnce(t *testing.T) {
	t.Parallel()
	b, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := Series{Model: "meta-llama/Llama-3.1-8B", Pool: "n300", BatchSize: 32, DataFormat: "bfloat16", Runner: "harness"}
	a := Acceptance{Series: s, Commit: strings.Repeat("ab", 20), Reason: "kv cache in bf8: agreed", By: "alice", At: time.Now().UTC()}
	if err := Accept(t.Context(), b, a); err != nil {
		t.Fatal(err)
	}
	b2 := a
	b2.By, b2.Reason = "mallory", "nothing to see"
	if err := Accept(t.Context(), b, b2); !errors.Is(err, ErrAccepted) || !strings.Contains(err.Error(), "by alice") {
		t.Fatalf("a second acceptance: %v, want ErrAccepted naming alice", err)
	}
	// A record planted at another series' key, and one without a reason.
	other := a
	other.Series.Pool = "n150"
	if err := storage.PutJSON(t.Context(), b, storage.AcceptedKey(other.Series.ID(), a.Commit), &a); err != nil {
		t.Fatal(err)
	}
	bad := a
	bad.Schema, bad.Commit, bad.Reason = SchemaAcceptance, strings.Repeat("cd", 20), ""
	if err := storage.PutJSON(t.Context(), b, storage.AcceptedKey(s.ID(), bad.Commit), &bad); err != nil {
		t.Fatal(err)
	}
	as, warnings, err := ReadAcceptances(t.Context(), b)
	if err != nil || len(as) != 1 || as[0].By != "alice" || len(warnings) != 2 {
		t.Fatalf("read %+v, warnings %q, %v; want alice's only and two warnings", as, warnings, err)
	}
	if AcceptanceOf(as, s, a.Commit) == nil || AcceptanceOf(as, other.Series, a.Commit) != nil {
		t.Errorf("AcceptanceOf does not tell the series apart")
	}
}
