package protocol

import "time"

// Events a Notification reports.
const (
	// NotifyRegression: the regression gate found regressed or failed jobs
	// in a run.
	NotifyRegression = "regression"
	// NotifyQuarantine: a worker took a device out of service.
	NotifyQuarantine = "quarantine"
	// NotifyDeadLetter: a worker dead-lettered a job.
	NotifyDeadLetter = "dead_letter"
)

// Notification is the JSON body of the webhook POST benchfleet sends when
// the gate finds a regression or a failure, or a worker quarantines a
// device or dead-letters a job (report.GateNotice, worker.Notifier). Text is what a chat shows
// (Slack and Mattermost incoming webhooks take it as is); the other fields
// say the same for machines. Absent fields are omitted.
type Notification struct {
	// Text is the human message: what happened, by how much, where, and a
	// link when there is one.
	Text string `json:"text"`
	// Event is NotifyRegression, NotifyQuarantine or NotifyDeadLetter.
	Event string `json:"event"`
	// Time is when the message was made (UTC).
	Time time.Time `json:"time"`
	// Run, Repo, Commit, Branch: the run and its source, when known.
	Run    string `json:"run,omitempty"`
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
	// Link points at more detail (the CI run), when known.
	Link string `json:"link,omitempty"`
	// Outcome is the gate's outcome (REGRESSION or FAIL) for NotifyRegression.
	Outcome string `json:"outcome,omitempty"`
	// Series are the jobs the message is about (regressed or failed ones).
	Series []NotificationSeries `json:"series,omitempty"`
	// OpenRegressions are the open (and accepted) regressions of the
	// run's series, a line each, each once however many jobs share it.
	OpenRegressions []string `json:"open_regressions,omitempty"`
	// Worker, Device, Pool, Job, Reason: the worker side of a quarantine
	// or a dead letter.
	Worker string `json:"worker,omitempty"`
	Device string `json:"device,omitempty"`
	Pool   string `json:"pool,omitempty"`
	Job    string `json:"job,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Held is how many messages of this event the rate limit held back
	// since the last one sent (absent: none).
	Held int `json:"held,omitempty"`
}

// NotificationSeries is one job of a regression notification.
type NotificationSeries struct {
	Job        string `json:"job"`
	Model      string `json:"model"`
	Pool       string `json:"pool"`
	BatchSize  int    `json:"batch_size"`
	DataFormat string `json:"data_format"`
	// Baseline and Value are samples/sec; Baseline is absent without
	// history. Change is (value - baseline) / baseline, absent without a
	// baseline.
	Baseline *float64 `json:"baseline,omitempty"`
	Value    float64  `json:"value"`
	Change   *float64 `json:"change,omitempty"`
	// Verdict is the gate's (regression or failed); Reason says why a
	// failed job failed.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// Commit status states GitHub accepts.
const (
	CommitSuccess = "success"
	CommitFailure = "failure"
	CommitError   = "error"
	CommitPending = "pending"
)

// CommitStatus is the GitHub commit status benchfleet sets on a gated
// run's commit (report.GateStatus): the body of
// POST /repos/{owner}/{repo}/statuses/{sha}.
type CommitStatus struct {
	// State is CommitSuccess, CommitFailure, CommitError or CommitPending.
	State string `json:"state"`
	// TargetURL links the status to details (the CI run); may be empty.
	TargetURL string `json:"target_url,omitempty"`
	// Description is a short summary (GitHub keeps 140 characters).
	Description string `json:"description,omitempty"`
	// Context names the check (default "benchfleet").
	Context string `json:"context"`
}
