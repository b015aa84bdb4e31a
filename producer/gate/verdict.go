package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
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

// JudgeRequest is a finished (or timed-out) run to judge.
type JudgeRequest struct {
	Manifest *protocol.RunManifest
	// Rows are the run's jobs as they ended (Rows of the watcher's states).
	Rows []runstate.Row
	// Gate turns the regression gate on: a regression makes the run exit 2,
	// and unreadable history is an error rather than a warning.
	Gate bool
	// GateConfig tunes the gate (zero: the defaults).
	GateConfig GateConfig
	// History reads the baseline history (nil: none; every passed job is
	// then insufficient-history).
	History HistoryFunc
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

// Judge is the run verdict pipeline every front end shares (submit --wait,
// runs watch, results gate, the web UI): it compares each row with its
// baseline history (setting Change and Verdict), and gives the report and
// its outcome (RunReport.Outcome()), which each front end turns into its
// own answer (the CLI's exit code).
func Judge(ctx context.Context, req JudgeRequest) (*RunVerdict, error) {
	rep := &RunReport{Manifest: req.Manifest, Rows: req.Rows, GateOn: req.Gate, TimedOut: req.TimedOut, Warnings: req.Warnings}
	v := &RunVerdict{Report: rep}
	if req.History != nil || req.Gate {
		g, err := NewGate(req.GateConfig, req.History)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrGateConfig, err)
		}
		verdicts, err := g.Evaluate(ctx, req.Manifest, req.Rows)
		switch {
		case err != nil && req.Gate:
			return nil, fmt.Errorf("regression gate: %w", err)
		case err != nil:
			v.HistoryErr = err
		default:
			ApplyVerdicts(req.Rows, verdicts)
			rep.Verdicts, rep.Gate = verdicts, g.Config()
		}
	}
	v.Outcome = rep.Outcome()
	return v, nil
}
