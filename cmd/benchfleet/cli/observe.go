package cli

import (
	"cmp"
	"context"
	"errors"
	"os"

	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/storage"
)

// notifyFlags are the notification flags of `submit --wait --gate` and
// `results gate`.
type notifyFlags struct {
	url         string
	githubToken string
	githubAPI   string
	// repo and commit are what this process was given (flags, environment,
	// the matrix file): the only commit a status is set on, never one read
	// from a stored manifest.
	repo, commit string
}

func (n *notifyFlags) register(fs *pflag.FlagSet) {
	// Secrets: the environment is read in check, not shown as a default
	// in --help.
	fs.StringVar(&n.url, "notify", "", "POST a JSON notification (Slack/Mattermost compatible text) here when the gate finds a regression or a failure; sent once per run and regression (env BENCHFLEET_NOTIFY)")
	fs.StringVar(&n.githubToken, "github-token", "", "set a GitHub commit status (context benchfleet/gate) on the run's commit (env GITHUB_TOKEN)")
	fs.StringVar(&n.githubAPI, "github-api", cmp.Or(os.Getenv("GITHUB_API_URL"), report.DefaultGitHubAPI), "GitHub API base URL (env GITHUB_API_URL)")
}

// check fills the flags from the environment (BENCHFLEET_NOTIFY,
// GITHUB_TOKEN) and validates them (usage errors name the flag).
func (n *notifyFlags) check() error {
	n.url, n.githubToken = cmp.Or(n.url, os.Getenv("BENCHFLEET_NOTIFY")), cmp.Or(n.githubToken, os.Getenv("GITHUB_TOKEN"))
	var ne *report.GateNotifyError
	if err := (&report.GateNotifier{WebhookURL: n.url, GitHubToken: n.githubToken, GitHubAPI: n.githubAPI}).Validate(); errors.As(err, &ne) && ne.Field == "webhook" {
		return usageErr("--notify: %v", err)
	} else if err != nil {
		return usageErr("--github-api: %v", err)
	}
	return nil
}

// send tells about a gated run (report.GateNotifier): failures are
// reported on stderr and never change the exit code: the gate's verdict
// stands.
func (n *notifyFlags) send(ctx context.Context, a *app, b storage.Bucket, rep *gate.RunReport) {
	g := &report.GateNotifier{WebhookURL: n.url, GitHubToken: n.githubToken, GitHubAPI: n.githubAPI, Repo: n.repo, Commit: n.commit, Log: a.log}
	g.Notify(ctx, b, rep).Print(a.stderr, rep.Manifest.Run)
}
