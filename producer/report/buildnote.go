package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// What a run's results measured (protocol.Result.Build), for its verdicts:
// the job's provisioned build or the host's installed one. A verdict about
// the host's build says nothing about the commit a job named, so the reports
// say which it was, and warn when a job named a commit but the host's
// build ran.

// BuildGroup is one build a run's results measured and the jobs that
// measured it.
type BuildGroup struct {
	// Text names the build: "provisioned 0123456789ab wheels
	// a-1.0-py3-none-any.whl@0123456789ab", "host's build", or "no build"
	// for results of jobs that named wheels but ended before a build was
	// made.
	Text string
	// Jobs are the jobs' ids, in row order.
	Jobs []string
	// Hits and Misses count the provisioned results whose environment was
	// ready or made for them; SetupMin and SetupMax bound their setup
	// times in seconds.
	Hits, Misses       int
	SetupMin, SetupMax float64
	md                 string // Text with its commit and wheels in code spans
}

// HostRun counts the results whose job named Commit but that ran the
// host's installed build.
type HostRun struct {
	Commit string
	Jobs   int
}

// RunBuilds is what the results of a run measured.
type RunBuilds struct {
	// Groups are the distinct builds, in the order rows first name them;
	// empty when no row has a result.
	Groups []BuildGroup
	// Host are the commits named by jobs that ran the host's build instead,
	// in row order.
	Host []HostRun
}

// BuildsOf says what the results among rows measured (rows without a
// result are left out).
func BuildsOf(rows []runstate.Row) RunBuilds {
	var rb RunBuilds
	group := map[string]int{}
	host := map[string]int{}
	for _, row := range rows {
		res := row.Result
		if res == nil {
			continue
		}
		text := buildName(res, plain)
		i, ok := group[text]
		if !ok {
			i = len(rb.Groups)
			group[text] = i
			rb.Groups = append(rb.Groups, BuildGroup{Text: text, md: buildName(res, codeSpan)})
		}
		g := &rb.Groups[i]
		g.Jobs = append(g.Jobs, row.Job)
		if b := res.Build; b != nil && b.Kind == protocol.BuildProvisioned && (b.Cache == protocol.CacheHit || b.Cache == protocol.CacheMiss) {
			if b.Cache == protocol.CacheHit {
				g.Hits++
			} else {
				g.Misses++
			}
			if g.Hits+g.Misses == 1 || b.SetupS < g.SetupMin {
				g.SetupMin = b.SetupS
			}
			g.SetupMax = max(g.SetupMax, b.SetupS)
		}
		if c := HostCommit(res); c != "" {
			j, ok := host[c]
			if !ok {
				j = len(rb.Host)
				host[c] = j
				rb.Host = append(rb.Host, HostRun{Commit: c})
			}
			rb.Host[j].Jobs++
		}
	}
	return rb
}

// HostCommit is the commit r's job named when it ran the host's installed
// build instead (r.Build says host, or says nothing and the job named no
// wheels: a worker from before builds); "" otherwise.
func HostCommit(r *protocol.Result) string {
	commit := r.Source.Commit
	switch b := r.Build; {
	case b == nil && len(r.Source.Wheels) == 0:
	case b != nil && b.Kind == protocol.BuildHost:
		if commit == "" {
			commit = b.Commit
		}
	default:
		return ""
	}
	return commit
}

// buildName names the build r measured, without what varies by job
// (cache, setup time); quote marks up its commit and wheels.
func buildName(r *protocol.Result, quote func(string) string) string {
	b := r.Build
	switch {
	case b == nil && len(r.Source.Wheels) > 0:
		return "no build"
	case b == nil || b.Kind == protocol.BuildHost:
		return "host's build"
	case b.Kind != protocol.BuildProvisioned:
		return "build " + b.Kind
	}
	var s strings.Builder
	if b.Cache == "" {
		s.WriteString("named")
	} else {
		s.WriteString("provisioned")
	}
	if b.Commit != "" {
		s.WriteString(" " + quote(runstate.ShortCommit(b.Commit)))
	}
	for i, w := range b.Wheels {
		if i == 0 {
			s.WriteString(" wheels ")
		} else {
			s.WriteString(", ")
		}
		s.WriteString(quote(w.Name + "@" + runstate.ShortCommit(w.SHA256)))
	}
	if b.Cache == "" {
		if e := r.Error; e != nil && e.Class == protocol.ClassInvalid {
			s.WriteString(" (refused: the job is invalid)")
		} else {
			s.WriteString(" (not made: the job ended before its build was ready)")
		}
	}
	return s.String()
}

// BuildText says what r measured in one line: "provisioned 0123456789ab
// wheels a-1.0-py3-none-any.whl@0123456789ab (cache hit, setup 1.2 s)" or
// "host's build".
func BuildText(r *protocol.Result) string {
	g := BuildGroup{Text: buildName(r, plain)}
	if b := r.Build; b != nil && b.Kind == protocol.BuildProvisioned {
		switch b.Cache {
		case protocol.CacheHit:
			g.Hits = 1
		case protocol.CacheMiss:
			g.Misses = 1
		}
		g.SetupMin, g.SetupMax = b.SetupS, b.SetupS
	}
	return g.String()
}

// String is the group's build with its cache outcomes and setup times:
// "provisioned … (cache hit, setup 1.2 s)" for one job, "(cache 2 hit, 1
// miss; setup 0.3–45.2 s)" for several.
func (g BuildGroup) String() string { return g.with(g.Text) }

// with is text followed by the group's cache outcomes and setup times.
func (g BuildGroup) with(text string) string {
	n := g.Hits + g.Misses
	if n == 0 {
		return text
	}
	var cache string
	switch {
	case n == 1 && g.Hits == 1:
		cache = "cache hit"
	case n == 1:
		cache = "cache miss"
	default:
		cache = fmt.Sprintf("cache %d hit, %d miss", g.Hits, g.Misses)
	}
	setup := "setup " + secs(g.SetupMin)
	if g.SetupMax != g.SetupMin {
		setup = "setup " + strconv.FormatFloat(g.SetupMin, 'f', 1, 64) + "–" + secs(g.SetupMax)
	}
	sep := ", "
	if n > 1 {
		sep = "; "
	}
	return text + " (" + cache + sep + setup + ")"
}

func plain(s string) string    { return s }
func codeSpan(s string) string { return "`" + mdCode(s) + "`" }

func secs(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" }

// Notices are the warnings about the run's builds: one per commit that
// jobs named but did not run ("3 jobs named commit 0123456789ab but ran
// the host's installed build: the verdict is about the host, not the
// commit").
func (rb RunBuilds) Notices() []string { return rb.notices(plain) }

// notices are the Notices, their commits marked up by quote.
func (rb RunBuilds) notices(quote func(string) string) []string {
	var out []string
	for _, h := range rb.Host {
		verb := "jobs"
		if h.Jobs == 1 {
			verb = "job"
		}
		out = append(out, fmt.Sprintf("%d %s named commit %s but ran the host's installed build: the verdict is about the host, not the commit",
			h.Jobs, verb, quote(runstate.ShortCommit(h.Commit))))
	}
	return out
}

// maxBuildJobs bounds the jobs a report lists for one build.
const maxBuildJobs = 10

// listJobs joins the first maxBuildJobs names with quote around each.
func listJobs(names []string, quote func(string) string) string {
	var s strings.Builder
	for i, n := range names {
		if i == maxBuildJobs {
			fmt.Fprintf(&s, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(quote(n))
	}
	return s.String()
}

// markdown is the group as Markdown: its commit and wheels in code spans.
func (g BuildGroup) markdown() string {
	if g.md == "" {
		return mdCell(g.String())
	}
	return mdCell(g.with(g.md))
}

// markdownBuilds is the Markdown of what the run measured: one Build line
// when every result measured the same build, else a list of the builds
// with their jobs (by case name), then the notices as warnings.
func markdownBuilds(rows []runstate.Row, nameOf map[string]string) string {
	rb := BuildsOf(rows)
	var b strings.Builder
	switch len(rb.Groups) {
	case 0:
		return ""
	case 1:
		fmt.Fprintf(&b, "\nBuild: %s.\n", rb.Groups[0].markdown())
	default:
		b.WriteString("\nBuilds:\n\n")
		for _, g := range rb.Groups {
			names := make([]string, len(g.Jobs))
			for i, j := range g.Jobs {
				names[i] = nameOf[j]
			}
			fmt.Fprintf(&b, "- %s: %s\n", g.markdown(), listJobs(names, codeSpan))
		}
	}
	for _, n := range rb.notices(codeSpan) {
		fmt.Fprintf(&b, "\n> **Warning:** %s.\n", mdCell(n))
	}
	return b.String()
}

// writeBuildLines prints what the run measured under its table: "build: …"
// when uniform, else one line per build with its jobs, then the notices.
func writeBuildLines(w io.Writer, rows []runstate.Row) error {
	rb := BuildsOf(rows)
	var b strings.Builder
	switch len(rb.Groups) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "build: %s\n", rb.Groups[0])
	default:
		b.WriteString("builds:\n")
		for _, g := range rb.Groups {
			fmt.Fprintf(&b, "  %s: %s\n", g, listJobs(g.Jobs, plain))
		}
	}
	for _, n := range rb.Notices() {
		fmt.Fprintf(&b, "warning: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
