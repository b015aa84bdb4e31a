package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/producer"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

type waitOptions struct {
	timeout   time.Duration
	junit     string
	summaryMD string
	gate      bool
	// gateConfig tunes the regression gate (zero: the defaults).
	gateConfig producer.GateConfig
	quiet      bool
	// notify tells about a gated run (used only with gate).
	notify *notifyFlags
	// inProcess: the run's NATS and worker live in this process (demo), so
	// an interrupt ends the run too.
	inProcess bool
	// warnings are said on stderr already and go into the summary too
	// (submit's "no live worker serves pool"; results reported but not in
	// the store after the grace period, added while waiting).
	warnings []string
	// timedOut: the waiting ended at the timeout (set by waitRun).
	timedOut bool
	// serviceSaid is the service of the run's pools said already (by
	// submit's warning): the waiter says a pool's outage only when it
	// differs.
	serviceSaid []producer.PoolService
}

// waitRun follows a run to its end with progress, prints the results table
// and returns the exit code as an error (nil when every job passed).
func (a *app) waitRun(ctx context.Context, js jetstream.JetStream, m *protocol.RunManifest, o waitOptions) error {
	// The verdict of each job is its stored result: events are progress,
	// and anyone who may submit may also publish an event.
	if a.storeURL == "" {
		return usageErr("waiting for a run needs --store (or BENCHFLEET_STORE): a job's verdict is its stored result, not an event")
	}
	store, err := a.openStoreRead(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	// Ctrl-C stops the waiting, not the run: say so, and how to follow it.
	ctx, stop := signalContext(ctx)
	defer stop()
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	pr := newProgressPrinter(a.stdout, a.isTTY())
	w := &producer.Watcher{JS: js, Manifest: m, Store: store, ResultGrace: a.resultGrace}
	// A job reported ended whose result this store never shows: most often
	// the worker writes to another store.
	// mu orders the printer and the warnings between the waiter and the
	// watch of the pools' service.
	var mu sync.Mutex
	warn := func(note string) {
		mu.Lock()
		defer mu.Unlock()
		pr.interrupt(func() { fmt.Fprintf(a.stderr, "warning: %s\n", note) })
		o.warnings = append(o.warnings, note)
	}
	w.OnMissing = func(st *producer.JobState, after time.Duration) {
		warn(producer.MissingResultNote(st, storage.Redact(a.storeURL), after))
	}
	// A pool whose every board is out of service keeps its jobs queued:
	// say so at once and while waiting, naming the boards and why.
	watchCtx, stopWatch := context.WithCancel(wctx)
	watched := make(chan struct{})
	if topo, err := topology.Open(wctx, js); err == nil {
		sw := &producer.ServiceWatch{Workers: topo.Workers, Pools: producer.RunPools(m.Jobs), Interval: a.servicePoll, Said: o.serviceSaid,
			OnChange: func(s producer.PoolService) { warn(s.String()) }}
		sw.Check(wctx)
		go func() {
			defer close(watched)
			sw.Run(watchCtx)
		}()
	} else {
		close(watched) // a hint only
	}
	states, err := w.Wait(wctx, func(p producer.Progress) {
		if !o.quiet {
			mu.Lock()
			pr.update(p)
			mu.Unlock()
		}
	})
	stopWatch()
	<-watched
	pr.finish()
	timedOut := false
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			timedOut = true
		} else if ctx.Err() != nil {
			if o.inProcess {
				return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: run %s stopped with this process", m.Run)}
			}
			return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: stopped waiting, but run %s goes on; follow it with: benchfleet runs watch %s", m.Run, m.Run)}
		} else {
			return err
		}
	}
	o.timedOut = timedOut
	rows := producer.Rows(m, states)
	code := producer.RowsCode(rows)
	// The comparison with the baseline (for reports, the gate, or a run of
	// a commit) fills each row's change and verdict, so it runs before the
	// table is printed.
	var rep *producer.RunReport
	if o.gate || o.junit != "" || o.summaryMD != "" || (a.storeURL != "" && m.Source.Commit != "") {
		r, gcode, err := a.reportRun(ctx, m, rows, o)
		if err != nil {
			return err
		}
		code, rep = gcode, r
	}
	if o.gate && o.notify != nil && rep != nil && !timedOut {
		if b, err := a.openStoreRead(ctx); err == nil {
			o.notify.send(ctx, a, b, rep)
			b.Close()
		}
	}
	fmt.Fprintln(a.stdout)
	if err := producer.WriteTable(a.stdout, rows); err != nil {
		return err
	}
	if o.gate && rep != nil && rep.Verdicts != nil {
		fmt.Fprintln(a.stdout)
		if err := writeGateTable(a.stdout, rep); err != nil {
			return err
		}
	}
	if timedOut {
		a.printSpooled(ctx, js, producer.ProgressOf(m, states))
		for _, w := range o.warnings {
			fmt.Fprintf(a.stdout, "\nwarning: %s", w)
		}
		all := producer.ProgressOf(m, states).All
		fmt.Fprintf(a.stdout, "\ntimed out after %s waiting for run %s: %s unfinished; the run goes on\n", o.timeout, m.Run,
			jobCount(all.Total-all.Done()))
		return exitCode(ExitTimeout)
	}
	if code != ExitOK {
		return exitCode(code)
	}
	return nil
}

// progressPrinter shows a live bar on a TTY and periodic lines otherwise.
type progressPrinter struct {
	w       interface{ Write([]byte) (int, error) }
	tty     bool
	last    time.Time
	lastTxt string
	start   time.Time
}

func newProgressPrinter(w interface{ Write([]byte) (int, error) }, tty bool) *progressPrinter {
	return &progressPrinter{w: w, tty: tty, start: time.Now()}
}

func (p *progressPrinter) update(pr producer.Progress) {
	txt := progressText(pr)
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

// interrupt runs fn (which writes a line elsewhere, e.g. stderr) so that it
// does not land inside the live bar on a TTY.
func (p *progressPrinter) interrupt(fn func()) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
		p.last = time.Time{}
	}
	fn()
}

func (p *progressPrinter) finish() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

func progressText(pr producer.Progress) string {
	c := pr.All
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d done (%d passed, %d failed", c.Done(), c.Total, c.Passed, c.Failed)
	if c.Cancelled > 0 {
		fmt.Fprintf(&b, ", %d cancelled", c.Cancelled)
	}
	fmt.Fprintf(&b, "), %d running, %d queued", c.Running, c.Queued)
	if c.Recording > 0 {
		fmt.Fprintf(&b, ", %d recording", c.Recording)
	}
	for _, note := range producer.SpooledNotes(pr, nil) {
		b.WriteString("; " + note)
	}
	if len(pr.ByPool) > 1 {
		pools := make([]string, 0, len(pr.ByPool))
		for k := range pr.ByPool {
			pools = append(pools, k)
		}
		sort.Strings(pools)
		b.WriteString(" |")
		for _, k := range pools {
			pc := pr.ByPool[k]
			fmt.Fprintf(&b, " %s %d/%d", k, pc.Done(), pc.Total)
			if pc.Failed > 0 {
				fmt.Fprintf(&b, " (%d failed)", pc.Failed)
			}
		}
	}
	return b.String()
}

func bar(done, total, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	n := done * width / total
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// printSpooled says, per worker, which of the run's results wait in a
// worker's spool and what becomes of them (from the fleet's heartbeats).
func (a *app) printSpooled(ctx context.Context, js jetstream.JetStream, p producer.Progress) {
	if p.All.Spooled == 0 {
		return
	}
	var fleet []protocol.WorkerStatus
	if topo, err := topology.Open(ctx, js); err == nil {
		fleet, _ = producer.ReadFleet(ctx, topo.Workers)
	}
	fmt.Fprintln(a.stdout)
	for _, note := range producer.SpooledNotes(p, fleet) {
		fmt.Fprintln(a.stdout, note)
	}
}
