// Package version says which benchfleet a process is: the module version
// and the VCS revision it was built from. They come from the Go build
// information (`go build` in a git checkout stamps the revision, with
// -buildvcs at its default) or, where that has none (a git worktree, a
// build with -buildvcs=false), from the values `make build` passes with
// -ldflags -X (see Stamp). A binary built with neither (`go run`, `go
// test`, a source tarball) says "unknown" rather than a guess.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Values set at link time by `make build` (-ldflags "-X
// github.com/benchfleet/benchfleet/internal/version.stampRevision=..."):
// the output of `git describe --tags --always --dirty`, `git rev-parse
// HEAD`, the commit's time (RFC 3339) and "true" when the tree had local
// changes. Empty: not set; the build information is used.
var (
	stampVersion, stampRevision, stampTime, stampModified string
)

// Unknown is what Info says of a revision it does not know.
const Unknown = "unknown"

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the module version: a release tag ("v1.4.0"), Go's
	// pseudo-version of the commit ("v0.0.0-20261207165901-2aca758aaed7",
	// "+dirty" with local changes) or `git describe`'s; "devel" when the
	// build recorded none.
	Version string
	// Revision is the full commit hash the binary was built from; "" when
	// the build recorded none.
	Revision string
	// Time is the commit's time; zero when unknown.
	Time time.Time
	// Modified is true when the tree had local changes at build time.
	Modified bool
	// Go is the Go version that built the binary.
	Go string
}

// Get reads the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, stampVersion, stampRevision, stampTime, stampModified)
}

// fromBuild is Get over bi (nil: none) and the link-time stamps.
func fromBuild(bi *debug.BuildInfo, sv, sr, st, sm string) Info {
	i := Info{Go: runtime.Version()}
	if bi != nil {
		i.Go = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.Time, _ = time.Parse(time.RFC3339, s.Value)
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if sr != "" {
		i.Revision, i.Modified = sr, sm == "true"
		i.Time, _ = time.Parse(time.RFC3339, st)
	}
	if sv != "" {
		i.Version = sv
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// Ref is the revision as records carry it (WorkerStatus, Result): the
// full hash, with "+modified" when the tree had local changes; "" when
// unknown.
func (i Info) Ref() string {
	if i.Revision != "" && i.Modified {
		return i.Revision + "+modified"
	}
	return i.Revision
}

// Short is the revision's first 12 characters, or Unknown.
func (i Info) Short() string {
	switch {
	case i.Revision == "":
		return Unknown
	case len(i.Revision) > 12:
		return i.Revision[:12]
	}
	return i.Revision
}

// String is the version in one line: "v1.4.0 (revision 2aca758aaed7)",
// "devel (revision 2aca758aaed7, modified)" or "devel (revision unknown)".
func (i Info) String() string {
	mod := ""
	if i.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("%s (revision %s%s)", i.Version, i.Short(), mod)
}

// Long is what `benchfleet version` prints: the version, the full
// revision with its time (or why it is unknown) and the Go version.
func (i Info) Long() string {
	var b strings.Builder
	fmt.Fprintf(&b, "benchfleet %s\n", i.Version)
	if i.Revision == "" {
		b.WriteString("revision unknown: built without VCS information (go run, go test, -buildvcs=false or outside a git checkout); `make build` stamps it\n")
	} else {
		fmt.Fprintf(&b, "revision %s", i.Revision)
		if !i.Time.IsZero() {
			fmt.Fprintf(&b, " (%s)", i.Time.UTC().Format(time.RFC3339))
		}
		if i.Modified {
			b.WriteString(", with local changes")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s %s/%s\n", i.Go, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
