package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// ErrGateConfig matches a bad gate configuration (a usage error).
var ErrGateConfig = errors.New("bad gate configuration")

// RowsOutcome is the outcome of rows without a gate: FAIL when any job
// did not pass, else PASS.
func RowsOutcome(rows []runstate.Row) Outcome {
	for _, r := range rows {
		if r.Status != protocol.StatusPassed {
			return OutcomeFail
		}
	}
	return OutcomePass
}

// RunInput is a finished (or timed-out) run to judge, from any of the
// three places a run's jobs are known: States (a waiter followed them;
// their results were read from the store), Results (the run's stored
// results, read already), or else Store (the run's results read from it).
type RunInput struct {
	// Run names the run (required without Manifest).
	Run string
	// Manifest is the run's manifest; nil: the store's
	// (runs/<run>/manifest.json), else one rebuilt from the results.
	Manifest *protocol.RunManifest
	// States are the run's jobs as a waiter followed them (Rows of
	// them); nil: the run's results (Results, else read from Store), with
	// confirmation repeats folded into their original's row.
	States map[string]*runstate.JobState
	// Results are the run's stored results, read already.
	Results []*protocol.Result
	// Store holds the results when neither States nor Results are given.
	Store storage.Bucket
	// Gate turns the regression gate on: a regression makes the run exit 2,
	// and unreadable history is an error rather than a warning.
	Gate bool
	// GateConfig tunes the gate (zero: the defaults).
	GateConfig GateConfig
	// History reads the baseline history (nil: none with States or
	// Results, and every passed job is then insufficient-history; from
	// Store, index.Query on it), and the run's results from Store.
	History HistoryFunc
	// Acceptances reads the acceptance records (nil: ReadAcceptances of
	// Store, when set; else none).
	Acceptances func(context.Context) ([]Acceptance, error)
	// TimedOut and Warnings are copied to the report (RunReport).
	TimedOut bool
	Warnings []string
}

// RunVerdict is a judged run: its report (rows with their change and verdict
// filled when history was read) and outcome.
type RunVerdict struct {
	Report  *RunReport
	Outcome Outcome
	// HistoryErr is set when the history could not be read and the gate
	// is off: the run is judged without a comparison.
	HistoryErr error
}

// JudgeRun is the run verdict pipeline every front end calls (submit
// --wait, runs watch, results gate, the dashboard's run page): it reads
// the run's rows from in, compares each with its baseline history
// (setting Change and Verdict), and gives the report and its outcome
// (RunReport.Outcome()), which each front end turns into its own answer
// (the CLI's exit code, a page). A run the store knows nothing of (no
// manifest, no results) is ErrNoRun.
func JudgeRun(ctx context.Context, in RunInput) (*RunVerdict, error) {
	m, rows, history, err := in.rows(ctx)
	if err != nil {
		return nil, err
	}
	rep := &RunReport{Manifest: m, Rows: rows, GateOn: in.Gate, TimedOut: in.TimedOut, Warnings: in.Warnings}
	v := &RunVerdict{Report: rep}
	if history != nil || in.Gate {
		g, err := NewGate(in.GateConfig, history)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrGateConfig, err)
		}
		as, err := in.acceptances(ctx)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("accepted regressions unreadable, every step down is listed as open: %v", err))
		}
		g.SetAccepted(as)
		verdicts, err := g.Evaluate(ctx, m, rows)
		switch {
		case err != nil && in.Gate:
			return nil, fmt.Errorf("regression gate: %w", err)
		case err != nil:
			v.HistoryErr = err
		default:
			ApplyVerdicts(rows, verdicts)
			rep.Verdicts, rep.Gate = verdicts, g.Config()
		}
	}
	v.Outcome = rep.Outcome()
	return v, nil
}

// rows gives the run's manifest, its rows and the history to judge them
// against, from wherever in knows the run's jobs.
func (in RunInput) rows(ctx context.Context) (*protocol.RunManifest, []runstate.Row, HistoryFunc, error) {
	if in.States != nil {
		return in.Manifest, runstate.Rows(in.Manifest, in.States), in.History, nil
	}
	query, rs := in.History, in.Results
	if rs == nil {
		if query == nil {
			query = func(ctx context.Context, f index.Filter) ([]*protocol.Result, error) {
				rs, _, err := index.Query(ctx, in.Store, f)
				return rs, err
			}
		}
		f := index.Filter{Run: in.Run}
		if in.Manifest != nil && !in.Manifest.CreatedAt.IsZero() {
			f.Since = in.Manifest.CreatedAt.Add(-time.Second)
		}
		var err error
		if rs, err = query(ctx, f); err != nil {
			return nil, nil, nil, err
		}
	}
	m := in.Manifest
	if m == nil {
		var err error
		if m, err = StoredManifest(ctx, in.Store, in.Run, rs); err != nil {
			return nil, nil, nil, err
		}
	}
	return m, RowsFromResults(m, rs), query, nil
}

// acceptances reads the acceptance records in gives, or the Store's.
func (in RunInput) acceptances(ctx context.Context) ([]Acceptance, error) {
	switch {
	case in.Acceptances != nil:
		return in.Acceptances(ctx)
	case in.Store != nil:
		as, _, err := ReadAcceptances(ctx, in.Store)
		return as, err
	}
	return nil, nil
}
