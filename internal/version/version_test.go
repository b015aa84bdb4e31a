package version

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromBuild(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261207165901-2aca758aaed7+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "2aca758aaed76f1a093034ea23c99c60c42bdef4"},
		{Key: "vcs.time", Value: "2026-12-07T16:59:01Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		name           string
		bi             *debug.BuildInfo
		sv, sr, st, sm string
		want           string
		long           []string
	}{
		{name: "go build in a checkout", bi: vcs, want: "v0.0.0-20261207165901-2aca758aaed7+dirty (revision 2aca758aaed7, modified)",
			long: []string{"revision 2aca758aaed76f1a093034ea23c99c60c42bdef4 (2026-12-07T16:59:01Z), with local changes", "go1.26.8"}},
		{name: "go run: no VCS", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, want: "devel (revision unknown)",
			long: []string{"revision unknown: built without VCS information"}},
		{name: "no build info", want: "devel (revision unknown)"},
		{name: "make build in a worktree", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			sv: "v1.2.0-3-g2aca758", sr: "2aca758aaed76f1a093034ea23c99c60c42bdef4", st: "2026-12-07T16:59:01Z", sm: "false",
			want: "v1.2.0-3-g2aca758 (revision 2aca758aaed7)", long: []string{"benchfleet v1.2.0-3-g2aca758\nrevision 2aca758aaed76f1a093034ea23c99c60c42bdef4 (2026-12-07T16:59:01Z)\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := fromBuild(c.bi, c.sv, c.sr, c.st, c.sm)
			if got := i.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			for _, w := range c.long {
				if !strings.Contains(i.Long(), w) {
					t.Errorf("Long() = %q, want it to contain %q", i.Long(), w)
				}
			}
		})
	}
	if i := fromBuild(vcs, "", "", "", ""); !i.Time.Equal(time.Date(2026, 12, 7, 16, 59, 1, 0, time.UTC)) {
		t.Errorf("Time = %v", i.Time)
	}
}
