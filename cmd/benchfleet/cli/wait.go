package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/producer/submit"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/storage"
)

type waitOptions struct {
	timeout   time.Duration
	junit     string
	summaryMD string
	gate      bool
	// gateConfig tunes the regression gate (zero: the defaults); its
	// Repeats confirm a suspected regression before the gate fails.
	gateConfig gate.GateConfig
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
	serviceSaid []watch.PoolService
}

// waitRun follows the run of w (its JS and Manifest set) to its end with
// progress, confirms suspected regressions when the gate is on, prints the
// results table and returns the exit code as an error (nil when every job
// passed).
func (a *app) waitRun(ctx context.Context, w *watch.Watcher, o waitOptions) error {
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
	w.Store, w.ResultGrace = store, a.resultGrace
	// Ctrl-C stops the waiting, not the run: say so, and how to follow it.
	ctx, stop := signalContext(ctx)
	defer stop()
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	pr := report.NewProgressPrinter(a.stdout, a.isTTY())
	// mu orders the printer and the warnings between the waiter and the
	// watch of the pools' service.
	var mu sync.Mutex
	warn := func(note string) {
		mu.Lock()
		defer mu.Unlock()
		pr.Interrupt(func() { fmt.Fprintf(a.stderr, "warning: %s\n", note) })
		o.warnings = append(o.warnings, note)
	}
	// A job reported ended whose result this store never shows: most often
	// the worker writes to another store.
	w.OnMissing = func(st *runstate.JobState, after time.Duration) {
		warn(watch.MissingResultNote(st, storage.Redact(a.storeURL), after))
	}
	w.OnOutage = func(o watch.Outage) { warn(o.String()) } // exit 69 (watch.ErrUnreachable) if it outlasts the timeout
	// A pool whose every board is out of service keeps its jobs queued:
	// say so at once and while waiting, naming the boards and why.
	stopWatch := watch.WatchService(wctx, w.JS, &watch.ServiceWatch{Pools: watch.RunPools(w.Manifest.Jobs),
		Interval: a.servicePoll, Said: o.serviceSaid, OnChange: func(s watch.PoolService) { warn(s.String()) }})
	onProgress := func(p runstate.Progress) {
		if !o.quiet {
			mu.Lock()
			pr.Update(p)
			mu.Unlock()
		}
	}
	states, err := w.Wait(wctx, onProgress)
	if err == nil && o.gate && o.gateConfig.Repeats > 0 {
		say := func(note string) {
			mu.Lock()
			defer mu.Unlock()
			pr.Interrupt(func() { fmt.Fprintln(a.stdout, note) })
		}
		c := &submit.Confirmer{JS: w.JS, Store: store, Repeats: o.gateConfig.Repeats, Log: a.log, OnQueued: say, OnFailed: func(err error) { warn(err.Error()) }}
		req := gate.RunInput{GateConfig: o.gateConfig, History: a.historyFrom(store)}
		states, _, err = c.Confirm(wctx, w, states, req, onProgress)
	}
	stopWatch()
	pr.Finish()
	m := w.Manifest
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			o.timedOut = true
		case ctx.Err() != nil && o.inProcess:
			return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: run %s stopped with this process", m.Run)}
		case ctx.Err() != nil:
			return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: stopped waiting, but run %s goes on; follow it with: benchfleet runs watch %s", m.Run, m.Run)}
		default:
			return err
		}
	}
	// The comparison with the baseline (for reports, the gate, or a run of
	// a commit) fills each row's change and verdict, so it runs before the
	// table is printed.
	compare := o.gate || o.junit != "" || o.summaryMD != "" || m.Source.Commit != ""
	rep, code, err := a.reportRun(ctx, m, states, compare, o)
	if err != nil {
		return err
	}
	if o.gate && o.notify != nil && !o.timedOut {
		o.notify.send(ctx, a, store, rep)
	}
	fmt.Fprintln(a.stdout)
	if err := report.WriteTable(a.stdout, rep.Rows); err != nil {
		return err
	}
	if o.gate && rep.Verdicts != nil {
		fmt.Fprintln(a.stdout)
		if err := report.WriteGateTable(a.stdout, rep); err != nil {
			return err
		}
	}
	if o.timedOut {
		p := runstate.ProgressOf(m, states)
		report.WriteNotes(a.stdout, watch.SpooledReport(ctx, w.JS, p))
		report.WriteTimedOut(a.stdout, o.warnings, o.timeout, p)
		return exitCode(ExitTimeout)
	}
	if code != ExitOK {
		return exitCode(code)
	}
	return nil
}
