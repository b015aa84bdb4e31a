package cli

import (
	"context"
	"errors"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// reportRun judges the run (gate.JudgeRun on its jobs' states), comparing
// them with their baseline history when compare and a store is configured
// (setting each row's Change and Verdict), prints the
// gate's verdicts when o.gate, writes the JUnit (o.junit) and Markdown
// (o.summaryMD, appended) reports, and returns the exit code: 1 when any
// job did not pass — a failure takes precedence over a regression in the
// same run — else 2 when the gate is on and a job regressed, else 0.
//
// The gate's tuning comes from o.gateConfig (zero: the defaults). Without a
// store there is no history: every passed job is insufficient-history.
func (a *app) reportRun(ctx context.Context, m *protocol.RunManifest, states map[string]*runstate.JobState, compare bool, o waitOptions) (*gate.RunReport, int, error) {
	req := gate.RunInput{Manifest: m, States: states, Gate: o.gate, GateConfig: o.gateConfig, TimedOut: o.timedOut, Warnings: o.warnings}
	if compare && a.storeURL != "" {
		b, err := a.openStoreRead(ctx)
		if err != nil {
			return nil, ExitFailed, err
		}
		defer b.Close()
		req.History, req.Store = a.historyFrom(b), b // Store: the acceptances
	}
	v, err := gate.JudgeRun(ctx, req)
	switch {
	case errors.Is(err, gate.ErrGateConfig):
		return nil, ExitUsage, usageErr("%v", err)
	case err != nil:
		return nil, ExitFailed, err
	}
	if v.HistoryErr != nil {
		a.log.Warn().Err(v.HistoryErr).Str("run", m.Run).Msg("no comparison with the baseline: history unreadable")
	}
	if err := report.WriteFiles(v.Report, o.junit, o.summaryMD); err != nil {
		return nil, ExitFailed, err
	}
	return v.Report, outcomeCode(v.Outcome), nil
}

// outcomeCode is a run outcome's exit code (the README's table): a
// timeout 3, a failed job 1 (before a regression), a regression 2, else 0.
func outcomeCode(o gate.Outcome) int {
	return map[gate.Outcome]int{gate.OutcomeTimedOut: ExitTimeout, gate.OutcomeFail: ExitFailed, gate.OutcomeRegression: ExitGate}[o]
}
