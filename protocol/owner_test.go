package protocol

import "testing"

func TestRunKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		run, manifest, cancel, chunk string
	}{
		{"ci-1", "ci-1.manifest", "ci-1.cancel", "ci-1.jobs.3"},
		{"untrusted-pr-7", "untrusted.untrusted-pr-7.manifest", "untrusted.untrusted-pr-7.cancel", "untrusted.untrusted-pr-7.jobs.3"},
		{"untrusted", "untrusted.untrusted.manifest", "untrusted.untrusted.cancel", "untrusted.untrusted.jobs.3"},
	} {
		if got := ManifestKey(c.run); got != c.manifest {
			t.Errorf("ManifestKey(%q) = %q, want %q", c.run, got, c.manifest)
		}
		if got := CancelKey(c.run); got != c.cancel {
			t.Errorf("CancelKey(%q) = %q, want %q", c.run, got, c.cancel)
		}
		if got := ManifestChunkKey(c.run, 3); got != c.chunk {
			t.Errorf("ManifestChunkKey(%q) = %q, want %q", c.run, got, c.chunk)
		}
		for key, what := range map[string]string{c.manifest: "manifest", c.cancel: "cancel", c.chunk: "jobs.3"} {
			if run, w, ok := ParseRunKey(key); !ok || run != c.run || w != what {
				t.Errorf("ParseRunKey(%q) = %q %q %v", key, run, w, ok)
			}
		}
	}
	for _, bad := range []string{"untrusted.ci-1.manifest", "untrusted-x.manifest", "x", "x.other", "untrusted.cancel"} {
		if run, w, ok := ParseRunKey(bad); ok {
			t.Errorf("ParseRunKey(%q) = %q %q, want not ok", bad, run, w)
		}
	}
}

func TestTrustedEvent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		subject string
		kind    EventKind
		want    bool
	}{
		{EventSubject("r", "j"), EventQueued, true},
		{EventSubject("r", "j"), EventCancelled, true},
		{EventSubject("r", "j"), EventDead, false},
		{EventSubject("r", "j"), EventPassed, false},
		{WorkerEventSubject("r", "j"), EventDead, true},
		{WorkerEventSubject("r", "j"), EventClaimed, true},
		{EventSubject("r", "j") + ".other", EventDead, false},
	} {
		if got := TrustedEvent(c.subject, c.kind); got != c.want {
			t.Errorf("TrustedEvent(%q, %s) = %v, want %v", c.subject, c.kind, got, c.want)
		}
	}
}
