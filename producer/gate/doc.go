// Package gate judges runs: the verdict pipeline every front end calls
// (JudgeRun: a run's states, results or store in, one RunVerdict out), the
// regression gate (a figure against its series' baseline: GateConfig.Judge,
// Gate.Evaluate), the confirmation of suspected regressions, series and
// their baselines (SeriesPoints, JudgeSeries) and the comparison of two
// runs. A Judgement is one figure's, a Verdict a job's, an Outcome a run's.
package gate
