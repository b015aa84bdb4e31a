package report

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/index"
)

// WriteTable prints rows as an aligned table, then what their results
// measured (writeBuildLines).
func WriteTable(w io.Writer, rows []runstate.Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	withChange := false
	for _, r := range rows {
		if r.Change != nil || r.Verdict != "" {
			withChange = true
		}
	}
	header := "JOB\tMODEL\tPOOL\tBATCH\tFORMAT\tSAMPLES/S\tPCC\tSTATUS"
	if withChange {
		header += "\tCHANGE\tVERDICT"
	}
	fmt.Fprintln(tw, header+"\tNOTE")
	for _, r := range rows {
		status := string(r.Status)
		if status == "" {
			status = cmp.Or(r.Activity, "unfinished")
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", r.Job, r.Model, r.Pool, r.BatchSize, r.DataFormat,
			r.JudgedRate(), runstate.FmtPCC(r.PCC), status)
		if withChange {
			line += "\t" + runstate.FmtChange(r.Change) + "\t" + r.Verdict
		}
		note := escape.Terminal(runstate.Shorten(r.Reason, 80))
		if r.Untrusted() {
			note = strings.TrimSuffix("untrusted; "+note, "; ")
		}
		fmt.Fprintln(tw, line+"\t"+note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeBuildLines(w, rows)
}

// ResultQuery is a results query as a person writes it: every field
// optional; Since a date (2026-11-01), an RFC 3339 time or an age (72h,
// 30d).
type ResultQuery struct {
	Model, Pool, Run, Commit, Branch, Status, Since string
}

// Filter validates q and gives its storage filter, ages counted back from
// now. An error starts with the field it is about ("pool", "run",
// "status", "since").
func (q ResultQuery) Filter(now time.Time) (index.Filter, error) {
	f := index.Filter{Model: q.Model, Pool: q.Pool, Run: q.Run, Commit: q.Commit, Branch: q.Branch, Status: protocol.Status(q.Status)}
	if q.Pool != "" && !protocol.ValidPool(q.Pool) {
		return f, fmt.Errorf("pool %q: want one of %s", q.Pool, strings.Join(protocol.Pools, ", "))
	}
	if q.Run != "" {
		if err := protocol.ValidID("run", q.Run); err != nil {
			return f, fmt.Errorf("run: %w", err)
		}
	}
	switch f.Status {
	case "", protocol.StatusPassed, protocol.StatusFailed, protocol.StatusError, protocol.StatusTimeout, protocol.StatusCancelled:
	default:
		return f, fmt.Errorf("status %q: want passed, failed, error, timeout or cancelled", q.Status)
	}
	if q.Since != "" {
		t, err := ParseSince(q.Since, now)
		if err != nil {
			return f, fmt.Errorf("since %q: %w", q.Since, err)
		}
		f.Since = t
	}
	return f, nil
}

// Describe lists the filters set, e.g. " — model resnet50, since 30d", or
// "" when none is.
func (q ResultQuery) Describe() string {
	var parts []string
	for _, p := range [][2]string{{"model", q.Model}, {"pool", q.Pool}, {"run", q.Run}, {"commit", q.Commit},
		{"branch", q.Branch}, {"since", q.Since}, {"status", q.Status}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " — " + strings.Join(parts, ", ")
}

// ParseSince reads a date (2026-11-01), an RFC 3339 time, or an age such
// as 72h or 30d counted back from now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errors.New("want a date (2006-01-02), an RFC 3339 time, or an age like 72h or 30d")
}

// WriteResults writes results as `results query` prints them: format
// "json" (an array of Result documents), "csv" (a header and one row per
// result, job text escaped against spreadsheet formulas) or else a table
// (job text stripped of terminal escapes) with a count.
func WriteResults(w io.Writer, rs []*protocol.Result, format string) error {
	switch format {
	case "json":
		if rs == nil {
			rs = []*protocol.Result{}
		}
		return writeIndentedJSON(w, rs)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"run", "job", "created", "model", "pool", "runner", "batch_size", "data_format", "status",
			"samples_per_sec", "pcc", "p50_ms", "commit", "branch", "worker", "device", "attempt",
			"build_kind", "build_commit", "build_cache", "setup_s", "trust"})
		for _, r := range rs {
			var build protocol.BuildInfo
			if r.Build != nil {
				build = *r.Build
			}
			_ = cw.Write(escape.CSVRow([]string{r.Run, r.Job, r.RunCreatedAt.Format(time.RFC3339), r.Benchmark.Model, r.Pool, r.Runner,
				strconv.Itoa(r.Benchmark.BatchSize), r.Benchmark.DataFormat, string(r.Status),
				csvNum(r.Measurements.SamplesPerSec), csvNum(r.PCC.Value),
				csvNum(r.Measurements.IterationMS.P50), r.Source.Commit, r.Source.Branch,
				r.Worker.ID, r.Device.ID, strconv.Itoa(r.Attempt),
				build.Kind, build.Commit, build.Cache, csvNum(r.Phases.SetupS), trustWord(r)}))
		}
		cw.Flush()
		return cw.Error()
	default:
		tw := tabwriter.NewWriter(escape.TerminalWriter(w), 0, 4, 2, ' ', 0)
		// A TRUST column only when some result is the untrusted producer's.
		withTrust := false
		for _, r := range rs {
			withTrust = withTrust || r.Untrusted()
		}
		header := "CREATED\tRUN\tJOB\tMODEL\tPOOL\tBATCH\tFORMAT\tSAMPLES/S\tPCC\tSTATUS\tCOMMIT"
		if withTrust {
			header += "\tTRUST"
		}
		fmt.Fprintln(tw, header)
		for _, r := range rs {
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", r.RunCreatedAt.Format("2006-01-02 15:04"),
				r.Run, r.Job, r.Benchmark.Model, r.Pool, r.Benchmark.BatchSize, r.Benchmark.DataFormat,
				runstate.FmtRate(r.Measurements.SamplesPerSec), runstate.FmtPCC(r.PCC.Value), r.Status, runstate.ShortCommit(r.Source.Commit))
			if withTrust {
				line += "\t" + cmp.Or(trustWord(r), "trusted")
			}
			fmt.Fprintln(tw, line)
		}
		if withTrust {
			fmt.Fprintf(tw, "(untrusted: a result of the untrusted producer, %s)\n", strings.TrimPrefix(runstate.UntrustedNote, "untrusted: "))
		}
		fmt.Fprintf(tw, "(%s)\n", runstate.Plural(len(rs), "1 result", strconv.Itoa(len(rs))+" results"))
		return tw.Flush()
	}
}

// trustWord is "untrusted" for a result of the untrusted producer, else "".
func trustWord(r *protocol.Result) string {
	if r.Untrusted() {
		return string(protocol.TrustUntrusted)
	}
	return ""
}

// writeIndentedJSON writes v as indented JSON and a newline, as every
// JSON output of the command line is written.
func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ProgressPrinter shows a run's progress (Progress.String) as a live bar
// on a TTY and as a line every 5 s otherwise. Not safe for concurrent use.
type ProgressPrinter struct {
	w       io.Writer
	tty     bool
	last    time.Time
	lastTxt string
	start   time.Time
}

// NewProgressPrinter prints to w, with the live bar when tty.
func NewProgressPrinter(w io.Writer, tty bool) *ProgressPrinter {
	return &ProgressPrinter{w: w, tty: tty, start: time.Now()}
}

// Update shows pr (on a TTY at most every 100 ms, else when it changed and
// 5 s passed, or the run is done).
func (p *ProgressPrinter) Update(pr runstate.Progress) {
	txt := pr.String()
	now := time.Now()
	if p.tty {
		if now.Sub(p.last) < 100*time.Millisecond && pr.All.Done() < pr.All.Total {
			return
		}
		fmt.Fprintf(p.w, "\r\033[K%s %s", bar(pr.All.Done(), pr.All.Total, 24), txt)
	} else {
		if txt == p.lastTxt || (now.Sub(p.last) < 5*time.Second && pr.All.Done() < pr.All.Total) {
			return
		}
		fmt.Fprintf(p.w, "[%s] %s\n", time.Since(p.start).Truncate(time.Second), txt)
	}
	p.last, p.lastTxt = now, txt
}

// Interrupt runs fn (which writes a line elsewhere, e.g. stderr) so that it
// does not land inside the live bar on a TTY.
func (p *ProgressPrinter) Interrupt(fn func()) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
		p.last = time.Time{}
	}
	fn()
}

// Finish ends the live bar's line.
func (p *ProgressPrinter) Finish() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

func bar(done, total, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	n := done * width / total
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// csvNum is a measured figure, or empty when it was not measured (0).
func csvNum(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// FlagText is q as the command-line flags that set it, e.g. "--model
// resnet50 --since 30d", or "(no filter)".
func (q ResultQuery) FlagText() string {
	s := ""
	for _, kv := range [][2]string{{"model", q.Model}, {"pool", q.Pool}, {"branch", q.Branch}, {"since", q.Since},
		{"status", q.Status}, {"commit", q.Commit}} {
		if kv[1] != "" {
			s += fmt.Sprintf(" --%s %s", kv[0], kv[1])
		}
	}
	if s == "" {
		return "(no filter)"
	}
	return s[1:]
}

// WriteNotes writes notes (e.g. watch.SpooledReport's), a line each,
// after a blank line; nothing when there are none.
func WriteNotes(w io.Writer, notes []string) {
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
}
