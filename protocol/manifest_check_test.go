package protocol

import (
	"errors"
	"testing"
)

func TestManifestCheckRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		m    RunManifest
		key  string
		ok   bool
	}{
		{"inline", RunManifest{Run: "r1", Jobs: []ManifestJob{{ID: "j1"}}}, "r1", true},
		{"chunked", RunManifest{Run: "r1", JobCount: 1500, Chunks: 2}, "r1", true},
		{"other run", RunManifest{Run: "r2"}, "r1", false},
		{"invalid name", RunManifest{Run: "bad name/.."}, "bad name/..", false},
		{"huge count", RunManifest{Run: "r1", JobCount: 1e12, Chunks: 1}, "r1", false},
		{"chunks disagree", RunManifest{Run: "r1", JobCount: 10, Chunks: 3}, "r1", false},
		{"too many chunks", RunManifest{Run: "r1", JobCount: MaxRunJobs, Chunks: 1 << 40}, "r1", false},
		{"negative", RunManifest{Run: "r1", JobCount: -1, Chunks: 1}, "r1", false},
		{"count without chunks", RunManifest{Run: "r1", JobCount: 5}, "r1", false},
		{"jobs beside chunks", RunManifest{Run: "r1", JobCount: 5, Chunks: 1, Jobs: []ManifestJob{{ID: "j"}}}, "r1", false},
		{"bad job id", RunManifest{Run: "r1", Jobs: []ManifestJob{{ID: "../x"}}}, "r1", false},
	} {
		err := tc.m.CheckRead(tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not match ErrInvalid", tc.name, err)
		}
	}
}
