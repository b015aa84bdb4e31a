package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// builds.fetch_timeout and fetch_per_mib are durations; bad ones are
// configuration errors naming the key.
func TestBuildsFetchDeadlines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml         string
		timeout, mib time.Duration
		err          string
	}{
		{yaml: "builds: {repos: {a/b: /srv/b.git}}"},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_timeout: 10s, fetch_per_mib: 500ms}", timeout: 10 * time.Second, mib: 500 * time.Millisecond},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_timeout: soon}", err: "builds.fetch_timeout"},
		{yaml: "builds: {repos: {a/b: /srv/b.git}, fetch_per_mib: -1s}", err: "builds.fetch_per_mib"},
	} {
		path := filepath.Join(t.TempDir(), "worker.yaml")
		if err := os.WriteFile(path, []byte(c.yaml+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		timeout, mib, err := f.Builds.FetchDeadlines()
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error naming %s", c.yaml, err, c.err)
		case c.err == "" && (err != nil || timeout != c.timeout || mib != c.mib):
			t.Errorf("%s: %s %s %v, want %s %s", c.yaml, timeout, mib, err, c.timeout, c.mib)
		}
	}
}
