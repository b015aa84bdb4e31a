package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/hashicorp/go-retryablehttp"
)

// DefaultGitHubAPI is GitHub's REST API (GitHub Actions sets
// GITHUB_API_URL for GitHub Enterprise).
const DefaultGitHubAPI = "https://api.github.com"

// GitHubConfig configures a GitHub client.
type GitHubConfig struct {
	// Token is a token with repo:status (or statuses: write) permission.
	// Required; it is sent only to APIBase.
	Token string
	// APIBase is the API's base URL (default DefaultGitHubAPI).
	APIBase string
	// Retries, RetryWaitMin, RetryWaitMax and Timeout as in Config.
	Retries                    int
	RetryWaitMin, RetryWaitMax time.Duration
	Timeout                    time.Duration
}

// GitHub sets commit statuses.
type GitHub struct {
	cfg    GitHubConfig
	base   string
	client *retryablehttp.Client
}

// NewGitHub validates cfg (the error names the field).
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("notify: GitHub token is required")
	}
	if cfg.APIBase == "" {
		cfg.APIBase = DefaultGitHubAPI
	}
	u, err := url.Parse(cfg.APIBase)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("notify: GitHub API base %q: want an http(s) URL", cfg.APIBase)
	}
	client, err := retryClient(&cfg.Retries, &cfg.RetryWaitMin, &cfg.RetryWaitMax, &cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &GitHub{cfg: cfg, base: strings.TrimRight(cfg.APIBase, "/"), client: client}, nil
}

var (
	repoRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	shaRE  = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)
)

// RepoName turns a source repo ("owner/name", a GitHub https or ssh URL)
// into "owner/name"; ok is false when it is not a GitHub repository name.
func RepoName(repo string) (string, bool) {
	r := strings.TrimSuffix(strings.TrimSpace(repo), ".git")
	for _, p := range []string{"https://github.com/", "http://github.com/", "git@github.com:", "ssh://git@github.com/", "github.com/"} {
		r = strings.TrimPrefix(r, p)
	}
	return r, repoRE.MatchString(r)
}

// SetStatus posts st for commit sha of repo ("owner/name"). GitHub keeps
// every status; the latest of a context is the one shown, so posting the
// same state again is harmless.
func (g *GitHub) SetStatus(ctx context.Context, repo, sha string, st protocol.CommitStatus) error {
	name, ok := RepoName(repo)
	if !ok {
		return fmt.Errorf("github status: repo %q is not owner/name", repo)
	}
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("github status: commit %q is not a hex sha", sha)
	}
	switch st.State {
	case protocol.CommitSuccess, protocol.CommitFailure, protocol.CommitError, protocol.CommitPending:
	default:
		return fmt.Errorf("github status: state %q: want success, failure, error or pending", st.State)
	}
	if st.Context == "" {
		st.Context = "benchfleet"
	}
	if r := []rune(st.Description); len(r) > 140 {
		st.Description = string(r[:139]) + "…"
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+g.cfg.Token)
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	u := g.base + "/repos/" + name + "/statuses/" + sha
	if err := postJSON(ctx, g.client, u, h, st); err != nil {
		return fmt.Errorf("github status %s@%s: %w", name, sha, err)
	}
	return nil
}
