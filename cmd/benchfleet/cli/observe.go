package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/producer"
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
	api := os.Getenv("GITHUB_API_URL")
	if api == "" {
		api = notify.DefaultGitHubAPI
	}
	fs.StringVar(&n.githubAPI, "github-api", api, "GitHub API base URL (env GITHUB_API_URL)")
}

// check fills the flags from the environment (BENCHFLEET_NOTIFY,
// GITHUB_TOKEN) and validates them (usage errors name the flag).
func (n *notifyFlags) check() error {
	if n.url == "" {
		n.url = os.Getenv("BENCHFLEET_NOTIFY")
	}
	if n.githubToken == "" {
		n.githubToken = os.Getenv("GITHUB_TOKEN")
	}
	if n.url != "" {
		if _, err := notify.NewWebhook(notify.Config{URL: n.url}); err != nil {
			return usageErr("--notify: %v", err)
		}
	}
	if n.githubToken != "" {
		if _, err := notify.NewGitHub(notify.GitHubConfig{Token: n.githubToken, APIBase: n.githubAPI}); err != nil {
			return usageErr("--github-api: %v", err)
		}
	}
	return nil
}

// send tells about a gated run: the notification (deduplicated by a
// record in the store, see notify.StoreDedup) when it did not pass, and
// the commit status when a token is given, on the repo and commit this
// process was given (n.repo, n.commit) and only when the run's are the
// same (statusTarget). Failures are reported on stderr and never change the exit
// code: the gate's verdict stands.
func (n *notifyFlags) send(ctx context.Context, a *app, b storage.Bucket, rep *producer.RunReport) {
	if n.url != "" {
		if key, m, ok := producer.GateNotice(rep); ok {
			h, err := notify.NewWebhook(notify.Config{URL: n.url, Dedup: notify.StoreDedup{Bucket: b}, Log: a.log})
			if err == nil {
				var sent bool
				if sent, err = h.Notify(ctx, key, m); err == nil && !sent {
					fmt.Fprintf(a.stderr, "notification for run %s already sent; not sent again\n", rep.Manifest.Run)
				}
			}
			if err != nil {
				fmt.Fprintf(a.stderr, "benchfleet: --notify: %v\n", err)
			}
		}
	}
	if n.githubToken != "" {
		if err := n.statusTarget(rep); err != nil {
			fmt.Fprintf(a.stderr, "benchfleet: --github-token: %v; no commit status set\n", err)
			return
		}
		g, err := notify.NewGitHub(notify.GitHubConfig{Token: n.githubToken, APIBase: n.githubAPI})
		if err == nil {
			err = g.SetStatus(ctx, n.repo, n.commit, producer.GateStatus(rep))
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "benchfleet: --github-token: %v\n", err)
		}
	}
}

// statusTarget says why no commit status may be set for rep: no GitHub
// repo or commit given to this process, or a run whose source names
// another one (its manifest is not what this process submitted).
func (n *notifyFlags) statusTarget(rep *producer.RunReport) error {
	src := rep.Manifest.Source
	switch {
	case n.commit == "":
		return fmt.Errorf("run %s: no commit given (--commit, env GITHUB_SHA)", rep.Manifest.Run)
	case src.Commit != n.commit || src.Repo != n.repo:
		return fmt.Errorf("run %s is of %s@%s, not of the given %s@%s", rep.Manifest.Run, src.Repo, src.Commit, n.repo, n.commit)
	}
	if _, ok := notify.RepoName(n.repo); !ok {
		return fmt.Errorf("run %s: no GitHub repo given (--repo, env GITHUB_REPOSITORY; got %q)", rep.Manifest.Run, n.repo)
	}
	return nil
}
