package producer

import (
	"context"
	"errors"
	"fmt"

	"github.com/benchfleet/benchfleet/protocol"
)

// Exit codes of a run's verdict (README, "exit code"): the CLI exits with them.
const (
	ExitPassed     = 0
	ExitFailed     = 1
	ExitRegression = 2
	ExitTimedOut   = 3
)

// ErrGateConfig matches a bad gate configuration (a usage error).
var ErrGateConfig = errors.New("bad gate configuration")

// ExitCode is the outcome's exit code: 3 when the waiting timed out with
// jobs unfinished, else 1 when any job did not pass (a failure takes
// precedence over a regression in the same run), else 2 on a regression
// with the gate on, else 0.
func (o Outcome) ExitCode() int {
	switch o {
	case OutcomeTimedOut:
		return ExitTimedOut
	case OutcomeFail:
		return ExitFailed
	case OutcomeRegression:
		return ExitRegression
	}
	return ExitPassed
}

// RowsCode is the exit code of rows without a gate: 1 when any job did
// not pass, else 0.
func RowsCode(rows []Row) int {
	for _, r := range rows {
		if r.Status != protocol.StatusPassed {
			return ExitFailed
		}
	}
	return ExitPassed
}

// JudgeRequest is a finished (or timed-out) run to judge.
type JudgeRequest struct {
	Manifest *protocol.RunManifest
	// Rows are the run's jobs as they ended (Rows of the watcher's states).
	Rows []Row
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
// filled when history was read) and exit code.
type RunVerdict struct {
	Report *RunReport
	Code   int
	// HistoryErr is set when the history could not be read and the gate
	// is off: the run is judged without a comparison.
	HistoryErr error
}

// Judge is the run verdict pipeline every front end shares (submit --wait,
// runs watch, results gate, the web UI): it compares each row with its
// baseline history (setting Change and Verdict), and gives the report and
// the exit code (RunReport.Outcome().ExitCode()).
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
	v.Code = rep.Outcome().ExitCode()
	return v, nil
}
