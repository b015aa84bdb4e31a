package report

import (
	"context"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/notify"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/storage"
)

// DefaultGitHubAPI is GitHub's REST API, GateNotifier.GitHubAPI's default
// (GitHub Actions sets GITHUB_API_URL for GitHub Enterprise).
const DefaultGitHubAPI = notify.DefaultGitHubAPI

// GateNotifier tells about a gated run: a webhook notification when it did
// not pass (GateNotice, sent once per run and regression: a record in the
// store remembers it), and a GitHub commit status (GateStatus).
type GateNotifier struct {
	// WebhookURL receives the notification ("" = none).
	WebhookURL string
	// GitHubToken sets the commit status ("" = none) through GitHubAPI
	// (default DefaultGitHubAPI).
	GitHubToken, GitHubAPI string
	// Repo and Commit are what the caller was given (flags, environment,
	// the matrix file): the only commit a status is set on, and only when
	// the run's source is the same, never one read from a stored manifest.
	Repo, Commit string
	// Log receives the webhook's retries.
	Log zerolog.Logger
}

// GateNotifyError is a GateNotifier setting that cannot be used: Field is
// "webhook" or "github-api".
type GateNotifyError struct {
	Field string
	Err   error
}

func (e *GateNotifyError) Error() string { return e.Err.Error() }
func (e *GateNotifyError) Unwrap() error { return e.Err }

// Validate checks the webhook URL and the GitHub API base.
func (n *GateNotifier) Validate() error {
	if n.WebhookURL != "" {
		if _, err := notify.NewWebhook(notify.Config{URL: n.WebhookURL}); err != nil {
			return &GateNotifyError{Field: "webhook", Err: err}
		}
	}
	if n.GitHubToken != "" {
		if _, err := notify.NewGitHub(notify.GitHubConfig{Token: n.GitHubToken, APIBase: n.GitHubAPI}); err != nil {
			return &GateNotifyError{Field: "github-api", Err: err}
		}
	}
	return nil
}

// GateNotified says what Notify did. A failure never changes the gate's
// verdict; the caller reports it.
type GateNotified struct {
	// AlreadySent: the notification of this news was sent before, so it
	// was not sent again.
	AlreadySent bool
	// WebhookErr is why the notification was not sent.
	WebhookErr error
	// StatusRefused is why no commit status may be set (StatusTarget).
	StatusRefused error
	// StatusErr is why setting the commit status failed.
	StatusErr error
}

// Notify sends rep's notification when it did not pass (deduplicated by a
// record in store) and sets the commit status when a token is given and
// StatusTarget allows it.
func (n *GateNotifier) Notify(ctx context.Context, store storage.Bucket, rep *gate.RunReport) GateNotified {
	var out GateNotified
	if n.WebhookURL != "" {
		if key, m, ok := GateNotice(rep); ok {
			h, err := notify.NewWebhook(notify.Config{URL: n.WebhookURL, Dedup: notify.StoreDedup{Bucket: store}, Log: n.Log})
			if err == nil {
				var sent bool
				sent, err = h.Notify(ctx, key, m)
				out.AlreadySent = err == nil && !sent
			}
			out.WebhookErr = err
		}
	}
	if n.GitHubToken != "" {
		if out.StatusRefused = n.StatusTarget(rep); out.StatusRefused != nil {
			return out
		}
		g, err := notify.NewGitHub(notify.GitHubConfig{Token: n.GitHubToken, APIBase: n.GitHubAPI})
		if err == nil {
			err = g.SetStatus(ctx, n.Repo, n.Commit, GateStatus(rep))
		}
		out.StatusErr = err
	}
	return out
}

// StatusTarget says why no commit status may be set for rep: no GitHub
// repo or commit given, or a run whose source names another one (its
// manifest is not what the caller submitted).
func (n *GateNotifier) StatusTarget(rep *gate.RunReport) error {
	src := rep.Manifest.Source
	switch {
	case n.Commit == "":
		return fmt.Errorf("run %s: no commit given (--commit, env GITHUB_SHA)", rep.Manifest.Run)
	case src.Commit != n.Commit || src.Repo != n.Repo:
		return fmt.Errorf("run %s is of %s@%s, not of the given %s@%s", rep.Manifest.Run, src.Repo, src.Commit, n.Repo, n.Commit)
	}
	if _, ok := notify.RepoName(n.Repo); !ok {
		return fmt.Errorf("run %s: no GitHub repo given (--repo, env GITHUB_REPOSITORY; got %q)", rep.Manifest.Run, n.Repo)
	}
	return nil
}

// Print writes what went wrong or was skipped, a line each, as the CLI
// says it on stderr (nothing when all went well).
func (o GateNotified) Print(w io.Writer, run string) {
	if o.AlreadySent {
		fmt.Fprintf(w, "notification for run %s already sent; not sent again\n", run)
	}
	if o.WebhookErr != nil {
		fmt.Fprintf(w, "benchfleet: --notify: %v\n", o.WebhookErr)
	}
	if o.StatusRefused != nil {
		fmt.Fprintf(w, "benchfleet: --github-token: %v; no commit status set\n", o.StatusRefused)
	}
	if o.StatusErr != nil {
		fmt.Fprintf(w, "benchfleet: --github-token: %v\n", o.StatusErr)
	}
}
