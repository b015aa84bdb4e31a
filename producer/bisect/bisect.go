package bisect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/producer/wheels"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// Bisect: the first bad commit of a confirmed regression. Between a good
// and a bad commit of a series, each commit's stored build (BuildRecord)
// is measured on the fleet, the midpoint first, with confirmation repeats,
// until the range is one commit.
//
// The good and bad commits are measured too, in the first round, rather
// than read from their stored results: a commit's figure is then of the
// same boards, the same fleet load and the same number of attempts as the
// commits it is compared with, and a regression that does not reproduce
// stops the bisect before it names a commit by noise. A commit is good
// when its median is nearer the good commit's than the bad one's
// (Classify); n commits take at most ceil(log2 n) + 1 rounds.

// DefaultBisectRepeats is the confirmation repeats of each measured commit.
const DefaultBisectRepeats = 2

// ErrNotReproduced is matched by Bisect's error when the bad commit is not
// slower than the good one by the threshold: there is nothing to bisect.
var ErrNotReproduced = errors.New("the regression does not reproduce")

// ErrBisectUnresolved is matched by Bisect's error when the first bad
// commit is one of several that cannot be told apart (the others have no
// build or did not pass): BisectReport.Candidates names them.
var ErrBisectUnresolved = errors.New("the first bad commit is one of several that could not be measured")

// BisectConfig says what to bisect.
type BisectConfig struct {
	// Series is the regressed series: Model, BatchSize, DataFormat and
	// Pool are required; Test and Runner, when empty, are those of the
	// series' stored results.
	Series gate.Series
	// Good and Bad are full commits; Commits are those after Good up to
	// Bad, oldest first, Bad last (GitRange, ListRange).
	Good, Bad string
	Commits   []string
	// Repeats is the confirmation repeats of every measured commit
	// (protocol.Job.Repeat): each is measured 1+Repeats times and judged
	// on the median.
	Repeats int
	// Threshold is the least drop of the bad commit against the good one
	// that is a regression to bisect (default DefaultThreshold).
	Threshold float64
}

// Bisector runs bisects on the fleet.
type Bisector struct {
	// Submitter publishes the jobs; its Store (required) holds the builds
	// and receives the results.
	Submitter *submit.Submitter
	// Poll is how often a round's results are looked for (default
	// DefaultResultPoll).
	Poll time.Duration
	// Progress, if not nil, is called after every round.
	Progress func(BisectRound)
}

// BisectProbe is one commit measured (or skipped).
type BisectProbe struct {
	Commit string
	// Index is the commit's place in the range, 1 to N; 0 is the good
	// commit.
	Index int
	// Run is the run that measured it.
	Run string
	// Values are the samples/s of its passed attempts; Attempts counts
	// all of them.
	Values   []float64
	Attempts int
	Median   float64
	Mark     Mark
	// Reason says why a skipped commit was not measured.
	Reason string
}

// BisectRound is one round: the good and the bad commits in round 1, one
// commit in each later one.
type BisectRound struct {
	// N is the round, Of the rounds expected at most (it grows when a
	// commit is skipped).
	N, Of int
	// Commits is the size of the range.
	Commits int
	Probes  []BisectProbe
}

// String is the round's progress line, e.g. "round 2/5: commit
// 3f2a9c01b4de (8 of 16) 123.4 samples/s -> bad".
func (r BisectRound) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d/%d: ", r.N, r.Of)
	good := 0.0
	for i, p := range r.Probes {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case p.Index == 0:
			b.WriteString("good " + runstate.ShortCommit(p.Commit))
			good = p.Median
		case r.N == 1:
			fmt.Fprintf(&b, "bad %s (%d of %d)", runstate.ShortCommit(p.Commit), p.Index, r.Commits)
		default:
			fmt.Fprintf(&b, "commit %s (%d of %d)", runstate.ShortCommit(p.Commit), p.Index, r.Commits)
		}
		if p.Mark == MarkSkip {
			b.WriteString(" -> skip: " + p.Reason)
			continue
		}
		fmt.Fprintf(&b, " %s samples/s", runstate.FmtRate(p.Median))
		if r.N > 1 {
			b.WriteString(" -> " + p.Mark.String())
		} else if p.Index > 0 && good > 0 {
			fmt.Fprintf(&b, " (%+.1f%%)", 100*(p.Median-good)/good)
		}
	}
	return b.String()
}

// BisectReport is a bisect's outcome.
type BisectReport struct {
	Series  gate.Series
	Commits int
	Rounds  int
	// Good and Bad are the ends as measured in round 1.
	Good, Bad BisectProbe
	// FirstBad is the first bad commit (nil when not found).
	FirstBad *BisectProbe
	// Candidates are the commits the first bad one is among when it could
	// not be told (ErrBisectUnresolved), oldest first.
	Candidates []BisectProbe
	// Skipped are the commits of the range that could not be measured.
	Skipped []BisectProbe
	// Probes are the commits measured after round 1, in order.
	Probes []BisectProbe
}

// WriteText writes the report for people: the first bad commit (or what
// the bisect found instead), the ends' figures, the rounds and the skipped
// commits.
func (r *BisectReport) WriteText(w io.Writer) {
	change := 0.0
	if r.Good.Median > 0 {
		change = (r.Bad.Median - r.Good.Median) / r.Good.Median
	}
	switch {
	case r.FirstBad != nil:
		fmt.Fprintf(w, "first bad commit: %s (%d of %d) %s samples/s, its parent %s\n", r.FirstBad.Commit, r.FirstBad.Index, r.Commits,
			runstate.FmtRate(r.FirstBad.Median), r.parent(r.FirstBad.Index))
	case len(r.Candidates) > 0:
		fmt.Fprintf(w, "first bad commit: one of %d commits (the others could not be measured):\n", len(r.Candidates))
		for _, c := range r.Candidates {
			what := c.Mark.String() + ", " + runstate.FmtRate(c.Median) + " samples/s"
			if c.Mark == MarkSkip {
				what = "skipped: " + c.Reason
			}
			fmt.Fprintf(w, "  %s (%d of %d) %s\n", c.Commit, c.Index, r.Commits, what)
		}
	default:
		fmt.Fprintf(w, "first bad commit: not found\n")
	}
	fmt.Fprintf(w, "series %s: good %s %s samples/s, bad %s %s samples/s (%+.1f%%)\n", r.Series.Name(),
		runstate.ShortCommit(r.Good.Commit), runstate.FmtRate(r.Good.Median), runstate.ShortCommit(r.Bad.Commit), runstate.FmtRate(r.Bad.Median), 100*change)
	fmt.Fprintf(w, "%d %s for %d %s\n", r.Rounds, runstate.Plural(r.Rounds, "round", "rounds"), r.Commits, runstate.Plural(r.Commits, "commit", "commits"))
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped %s (%d of %d): %s\n", s.Commit, s.Index, r.Commits, s.Reason)
	}
}

// parent describes the commit before the index'th as measured: its
// figure, or that it was not.
func (r *BisectReport) parent(index int) string {
	if index == 1 {
		return fmt.Sprintf("the good commit %s %s samples/s", runstate.ShortCommit(r.Good.Commit), runstate.FmtRate(r.Good.Median))
	}
	for _, p := range r.Probes {
		if p.Index == index-1 && p.Mark != MarkSkip {
			return fmt.Sprintf("%s %s samples/s", runstate.ShortCommit(p.Commit), runstate.FmtRate(p.Median))
		}
	}
	return "not measured"
}

// Bisect finds the first bad commit of cfg's range. It returns the report
// also with ErrNotReproduced and ErrBisectUnresolved; errors about the
// input match ErrBisectInput.
func (b *Bisector) Bisect(ctx context.Context, cfg BisectConfig) (*BisectReport, error) {
	store := b.Submitter.Store
	if store == nil {
		return nil, fmt.Errorf("%w: a bisect needs the store (the builds and the results are there)", ErrBisectInput)
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	tpl, err := bisectTemplate(ctx, store, cfg)
	if err != nil {
		return nil, err
	}
	// The job checked as submit checks it, before any build is read or
	// anything published: a runner that installs no wheels (sim, cpu)
	// cannot measure a build, and its series has no build records.
	if _, _, err := bisectJobs(cfg, tpl, buildShape(cfg.Good)); err != nil {
		return nil, err
	}
	n := len(cfg.Commits)
	rep := &BisectReport{Series: cfg.Series, Commits: n}
	// Every commit's build, read up front: one without is skipped; the
	// ends need theirs.
	goodBuild, err := commitBuild(ctx, store, cfg.Good)
	if err != nil {
		return nil, fmt.Errorf("the good commit %s: %w", runstate.ShortCommit(cfg.Good), err)
	}
	builds := make([]*wheels.BuildRecord, n)
	marks := make([]Mark, n)
	probes := make([]BisectProbe, n)
	for i, c := range cfg.Commits {
		probes[i] = BisectProbe{Commit: c, Index: i + 1}
		builds[i], err = commitBuild(ctx, store, c)
		switch {
		case errors.Is(err, wheels.ErrNoBuild) && i == n-1:
			return nil, fmt.Errorf("the bad commit %s: %w", runstate.ShortCommit(cfg.Bad), err)
		case errors.Is(err, wheels.ErrNoBuild):
			marks[i], probes[i].Mark, probes[i].Reason = MarkSkip, MarkSkip, skipReason(err)
			rep.Skipped = append(rep.Skipped, probes[i])
		case err != nil:
			return nil, err
		}
	}

	// Round 1: both ends.
	marks[n-1] = MarkBad
	of := 1 + Narrow(marks).Left
	rep.Good, rep.Bad = BisectProbe{Commit: cfg.Good}, probes[n-1]
	ends := []*BisectProbe{&rep.Good, &rep.Bad}
	if err := b.measure(ctx, cfg, tpl, []*wheels.BuildRecord{goodBuild, builds[n-1]}, ends); err != nil {
		return nil, err
	}
	rep.Rounds = 1
	b.progress(BisectRound{N: 1, Of: of, Commits: n, Probes: []BisectProbe{rep.Good, rep.Bad}})
	if rep.Good.Mark == MarkSkip {
		return rep, fmt.Errorf("the good commit %s: %s", runstate.ShortCommit(cfg.Good), rep.Good.Reason)
	}
	if rep.Bad.Mark == MarkSkip {
		return rep, fmt.Errorf("the bad commit %s: %s", runstate.ShortCommit(cfg.Bad), rep.Bad.Reason)
	}
	threshold := cfg.Threshold
	if threshold == 0 {
		threshold = gate.DefaultThreshold
	}
	if rep.Bad.Median > rep.Good.Median*(1-threshold) {
		return rep, fmt.Errorf("%w: the bad commit %s measures %s samples/s, the good %s %s: %+.1f%%, not a drop of %s or more",
			ErrNotReproduced, runstate.ShortCommit(cfg.Bad), runstate.FmtRate(rep.Bad.Median), runstate.ShortCommit(cfg.Good), runstate.FmtRate(rep.Good.Median),
			100*(rep.Bad.Median-rep.Good.Median)/rep.Good.Median, gate.FmtPercent(threshold))
	}
	probes[n-1] = rep.Bad

	for {
		nw := Narrow(marks)
		switch {
		case nw.FirstBad >= 0:
			p := probes[nw.FirstBad]
			rep.FirstBad = &p
			return rep, nil
		case len(nw.Candidates) > 0:
			for _, i := range nw.Candidates {
				rep.Candidates = append(rep.Candidates, probes[i])
			}
			return rep, fmt.Errorf("%w: %d candidates from %s (%d of %d) to %s (%d of %d)", ErrBisectUnresolved, len(nw.Candidates),
				runstate.ShortCommit(cfg.Commits[nw.Candidates[0]]), nw.Candidates[0]+1, n, runstate.ShortCommit(cfg.Commits[nw.Candidates[len(nw.Candidates)-1]]), nw.Candidates[len(nw.Candidates)-1]+1, n)
		case nw.Probe < 0:
			return rep, fmt.Errorf("bisect: no bad commit in the range") // marks[n-1] is bad: not reached
		}
		of = max(of, rep.Rounds+nw.Left)
		p := &probes[nw.Probe]
		if err := b.measure(ctx, cfg, tpl, []*wheels.BuildRecord{builds[nw.Probe]}, []*BisectProbe{p}); err != nil {
			return rep, err
		}
		if p.Mark != MarkSkip {
			p.Mark = Classify(p.Median, rep.Good.Median, rep.Bad.Median)
		} else {
			rep.Skipped = append(rep.Skipped, *p)
		}
		marks[nw.Probe] = p.Mark
		rep.Rounds++
		rep.Probes = append(rep.Probes, *p)
		b.progress(BisectRound{N: rep.Rounds, Of: of, Commits: n, Probes: []BisectProbe{*p}})
	}
}

func (b *Bisector) progress(r BisectRound) {
	if b.Progress != nil {
		b.Progress(r)
	}
}

// Check checks the config; its errors match ErrBisectInput and name the
// flag.
func (c *BisectConfig) Check() error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	if !protocol.ValidCommit(c.Good) || !protocol.ValidCommit(c.Bad) {
		return fmt.Errorf("%w: --good and --bad must be full commits", ErrBisectInput)
	}
	return checkRange(c.Good, c.Bad, c.Commits)
}

// Resolve sets c's Good, Bad and Commits from the command line's --good
// and --bad (hex, full or abbreviated) and --mirror or --commits
// (BisectRange), and checks c. Every flag's value is checked before the
// disk or git is touched; the errors match ErrBisectInput and name the
// flag.
func (c *BisectConfig) Resolve(ctx context.Context, mirror, list, good, bad string) (err error) {
	if err := c.checkFlags(); err != nil {
		return err
	}
	if c.Good, c.Bad, c.Commits, err = BisectRange(ctx, mirror, list, good, bad); err != nil {
		return err
	}
	return c.Check()
}

// checkFlags checks the config's fields other than the commits.
func (c *BisectConfig) checkFlags() error {
	s := c.Series
	switch {
	case s.Model == "" || s.Pool == "" || s.DataFormat == "":
		return fmt.Errorf("%w: the series needs --model, --batch-size, --data-format and --pool", ErrBisectInput)
	case s.BatchSize < 1:
		return fmt.Errorf("%w: --batch-size %d: want a positive batch size", ErrBisectInput, s.BatchSize)
	case s.DataFormat != protocol.FormatFloat32 && s.DataFormat != protocol.FormatBfloat16:
		return fmt.Errorf("%w: --data-format %q: want %s or %s", ErrBisectInput, s.DataFormat, protocol.FormatFloat32, protocol.FormatBfloat16)
	case !protocol.ValidPool(s.Pool):
		return fmt.Errorf("%w: --pool %q: want one of %s", ErrBisectInput, s.Pool, strings.Join(protocol.Pools, ", "))
	case c.Repeats < 0 || c.Repeats > protocol.MaxRepeat:
		return fmt.Errorf("%w: --repeats %d: want 0 to %d", ErrBisectInput, c.Repeats, protocol.MaxRepeat)
	case c.Threshold < 0 || c.Threshold >= 1:
		return fmt.Errorf("%w: --threshold %v: want a drop between 0 and 1", ErrBisectInput, c.Threshold)
	}
	return nil
}

// skipReason is why a commit without a build (commitBuild's ErrNoBuild)
// is skipped: "no stored build" when it has no record, else what is wrong
// with its record.
func skipReason(err error) string {
	if nr := (*wheels.NoRecordError)(nil); errors.As(err, &nr) {
		return "no stored build"
	}
	return err.Error()
}

// commitBuild is the stored build of commit, checked: a record naming a
// wheel the store no longer holds is no build.
func commitBuild(ctx context.Context, store storage.Bucket, commit string) (*wheels.BuildRecord, error) {
	rec, err := wheels.ReadBuildRecord(ctx, store, commit)
	if errors.Is(err, wheels.ErrBadBuildRecord) {
		return nil, fmt.Errorf("%w: %w", wheels.ErrNoBuild, err)
	}
	if err != nil {
		return nil, err
	}
	for _, w := range rec.Wheels {
		ok, err := store.Exists(ctx, w.URL)
		if err != nil {
			return nil, fmt.Errorf("wheel %s of commit %s: %w", w.URL, commit, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: its record names %s, which the store no longer holds", wheels.ErrNoBuild, w.URL)
		}
	}
	return rec, nil
}

// bisectTemplate is the job the bisect runs at every commit (its source
// set per commit): the newest of the series' stored results at the bad
// commit (else at the good one), as it ran: the benchmark with its loop
// and warmup counts, the runner, the project. A regressed series has one.
func bisectTemplate(ctx context.Context, store storage.Bucket, cfg BisectConfig) (protocol.Job, error) {
	s := cfg.Series
	var last *protocol.Result
	for _, c := range []string{cfg.Bad, cfg.Good} {
		rs, _, err := index.Query(ctx, store, index.Filter{Model: s.Model, Pool: s.Pool, Commit: c})
		if err != nil {
			return protocol.Job{}, fmt.Errorf("bisect: the series' results at %s: %w", runstate.ShortCommit(c), err)
		}
		for _, r := range rs {
			if r.Untrusted() {
				continue // the untrusted producer's job is not the series' job
			}
			rs := gate.SeriesOf(r)
			if rs.BatchSize != s.BatchSize || rs.DataFormat != s.DataFormat || (s.Test != "" && rs.Test != s.Test) || (s.Runner != "" && rs.Runner != s.Runner) {
				continue
			}
			if last == nil || gate.ResultBefore(last, r) {
				last = r
			}
		}
		if last != nil {
			break
		}
	}
	if last == nil {
		return protocol.Job{}, fmt.Errorf("%w: the store holds no result of series %s%s%s at %s or %s: the bisect runs the job as the series ran it",
			ErrBisectInput, s.Name(), optional(" test ", s.Test), optional(" runner ", s.Runner), runstate.ShortCommit(cfg.Bad), runstate.ShortCommit(cfg.Good))
	}
	return protocol.Job{Schema: protocol.SchemaJob, Pool: last.Pool, Runner: last.Runner, Priority: protocol.PriorityHigh,
		Benchmark: last.Benchmark, Source: protocol.Source{Project: last.Source.Project},
		Labels: map[string]string{"bisect": "true"}}, nil
}

func optional(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

// buildShape is a build of commit as a record gives one (a repository, a
// wheel in the store), for checking the bisect's jobs before any record
// is read: it names no wheel the store holds.
func buildShape(commit string) *wheels.BuildRecord {
	sum := strings.Repeat("0", 64)
	return &wheels.BuildRecord{Repo: "bisect/check", Commit: commit, Wheels: []protocol.Wheel{{URL: protocol.BuildKey(sum, "check-0-py3-none-any.whl"), SHA256: sum}}}
}

// bisectJobs are the jobs measuring rec's commit: the template on its
// build, and its repeats, in one run named by the commit, the bisect's
// ends and the job, so a bisect run again (or resumed) attaches to the
// runs it made and reuses their results.
func bisectJobs(cfg BisectConfig, tpl protocol.Job, rec *wheels.BuildRecord) (string, []*protocol.Job, error) {
	base := tpl
	base.Source = protocol.Source{Project: tpl.Source.Project, Repo: rec.Repo, Commit: rec.Commit, Wheels: rec.Wheels}
	base.Normalize()
	h := sha256.Sum256([]byte(cfg.Good + "\x00" + cfg.Bad + "\x00" + fmt.Sprint(cfg.Repeats) + "\x00" + base.Cell()))
	base.Run = "bisect-" + rec.Commit[:12] + "-" + hex.EncodeToString(h[:4])
	base.CreatedAt = time.Unix(0, 0).UTC() // Submit sets it
	var jobs []*protocol.Job
	for r := 0; r <= cfg.Repeats; r++ {
		j := base
		j.Repeat = r
		_, j.ID = j.CellID()
		if err := j.Validate(); err != nil {
			return "", nil, fmt.Errorf("%w: the job at %s: %w", ErrBisectInput, runstate.ShortCommit(rec.Commit), err)
		}
		jobs = append(jobs, &j)
	}
	if err := submit.CheckJobs(jobs); err != nil {
		return "", nil, fmt.Errorf("%w: the series' job cannot run a commit's build (a bisect needs a series of a harness pool, whose jobs install wheels): %w",
			ErrBisectInput, err)
	}
	return base.Run, jobs, nil
}

// measure runs the jobs of every commit (their builds recs) at once and
// waits for their results: each probe gets its figures, or MarkSkip with
// the reason when none of its attempts passed.
func (b *Bisector) measure(ctx context.Context, cfg BisectConfig, tpl protocol.Job, recs []*wheels.BuildRecord, probes []*BisectProbe) error {
	runs := make([]string, len(recs))
	jobs := make([][]*protocol.Job, len(recs))
	for i, rec := range recs { // every commit's jobs checked before any is published
		var err error
		if runs[i], jobs[i], err = bisectJobs(cfg, tpl, rec); err != nil {
			return err
		}
	}
	mans := make([]*protocol.RunManifest, len(recs))
	for i, rec := range recs {
		run := runs[i]
		res, err := b.Submitter.Submit(ctx, submit.Submission{Run: run, Submitter: "bisect", Priority: tpl.Priority, Jobs: jobs[i],
			Source: jobs[i][0].Source, Labels: tpl.Labels})
		if err != nil {
			return fmt.Errorf("bisect: commit %s: %w", runstate.ShortCommit(rec.Commit), err)
		}
		mans[i], probes[i].Run = res.Manifest, run
	}
	for i, m := range mans {
		w := &watch.Watcher{JS: b.Submitter.JS, Manifest: m, Store: b.Submitter.Store, Poll: b.Poll}
		states, err := w.Wait(ctx, nil)
		if err != nil {
			return fmt.Errorf("bisect: commit %s (run %s): %w", runstate.ShortCommit(probes[i].Commit), m.Run, err)
		}
		p := probes[i]
		p.Values, p.Attempts = nil, len(states)
		var why []string
		for _, st := range runstate.Sorted(m, states) {
			if r := st.Result; r != nil && r.Status == protocol.StatusPassed && r.Measurements.SamplesPerSec > 0 {
				p.Values = append(p.Values, r.Measurements.SamplesPerSec)
			} else if st.Result != nil && st.Result.Error != nil {
				why = append(why, fmt.Sprintf("%s: %s", st.Status(), st.Result.Error.Message))
			} else {
				why = append(why, string(st.Status()))
			}
		}
		if len(p.Values) == 0 {
			p.Mark, p.Reason = MarkSkip, fmt.Sprintf("none of its %d attempts passed (run %s: %s)", p.Attempts, m.Run, truncateText(strings.Join(why, "; "), 300))
			continue
		}
		p.Median = runstate.Median(p.Values)
	}
	return nil
}
