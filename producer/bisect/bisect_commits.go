package bisect

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// The commits a bisect walks: from a git repository (a clone, or a bare
// mirror like the worker's build cache keeps), or from a list.

// ErrBisectInput is matched by the errors of the bisect about what it was
// given: a malformed commit, one the repository or list lacks, a range
// that is empty, a series without a job to run. They are the caller's to
// fix (the CLI's usage errors).
var ErrBisectInput = errors.New("bad bisect input")

var commitish = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// BisectRange is GitRange of the repository at mirror, or ListRange of the
// file list: exactly one of them is given, and good and bad are required,
// commits in hex (checked before mirror or list is read).
func BisectRange(ctx context.Context, mirror, list, good, bad string) (goodFull, badFull string, commits []string, err error) {
	if err := checkEnds(good, bad); err != nil {
		return "", "", nil, err
	}
	switch {
	case mirror != "" && list != "":
		return "", "", nil, fmt.Errorf("%w: give one of --mirror DIR or --commits FILE, not both", ErrBisectInput)
	case mirror == "" && list == "":
		return "", "", nil, fmt.Errorf("%w: give --mirror DIR (a clone or bare mirror of the repository) or --commits FILE (one commit a line, oldest first)", ErrBisectInput)
	case mirror != "":
		return GitRange(ctx, mirror, good, bad)
	}
	data, err := os.ReadFile(list)
	if err != nil {
		return "", "", nil, fmt.Errorf("%w: --commits: %w", ErrBisectInput, err)
	}
	return ListRange(data, good, bad)
}

// GitRange is the commits after good up to bad in the git repository at
// dir, oldest first — `git rev-list --ancestry-path --reverse good..bad`:
// the commits that are descendants of good and ancestors of bad, so bad
// is the last — with good and bad resolved to full commits. good and bad
// are commits in hex, full or abbreviated.
func GitRange(ctx context.Context, dir, good, bad string) (goodFull, badFull string, commits []string, err error) {
	if err := checkEnds(good, bad); err != nil {
		return "", "", nil, err
	}
	if st, err := os.Stat(dir); err != nil {
		return "", "", nil, fmt.Errorf("%w: --mirror %s: no such folder (want a clone or bare mirror of the repository)", ErrBisectInput, dir)
	} else if !st.IsDir() {
		return "", "", nil, fmt.Errorf("%w: --mirror %s: not a folder (want a clone or bare mirror of the repository)", ErrBisectInput, dir)
	}
	if _, err := gitOut(ctx, dir, "rev-parse", "--git-dir"); err != nil {
		return "", "", nil, fmt.Errorf("%w: --mirror %s: not a git repository (%v)", ErrBisectInput, dir, err)
	}
	if goodFull, err = gitOut(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", good+"^{commit}"); err != nil {
		return "", "", nil, fmt.Errorf("%w: --good %s: not a commit of %s (%v)", ErrBisectInput, good, dir, err)
	}
	if badFull, err = gitOut(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", bad+"^{commit}"); err != nil {
		return "", "", nil, fmt.Errorf("%w: --bad %s: not a commit of %s (%v)", ErrBisectInput, bad, dir, err)
	}
	out, err := gitOut(ctx, dir, "rev-list", "--ancestry-path", "--reverse", goodFull+".."+badFull, "--")
	if err != nil {
		return "", "", nil, fmt.Errorf("bisect: git rev-list in %s: %w", dir, err)
	}
	commits = strings.Fields(out)
	if err := checkRange(goodFull, badFull, commits); err != nil {
		return "", "", nil, err
	}
	return goodFull, badFull, commits, nil
}

// checkEnds checks --good and --bad: given, and commits in lowercase hex.
func checkEnds(good, bad string) error {
	for _, c := range []struct{ flag, v, what string }{{"--good", good, "the last commit known good"}, {"--bad", bad, "the commit known bad"}} {
		if c.v == "" {
			return fmt.Errorf("%w: %s is required (%s)", ErrBisectInput, c.flag, c.what)
		}
		if !commitish.MatchString(c.v) {
			return fmt.Errorf("%w: %s %q: want a commit in lowercase hex (4 to 64 digits)", ErrBisectInput, c.flag, c.v)
		}
	}
	return nil
}

// gitOut runs git in dir without the caller's GIT_ environment (which
// could point it at another repository) and returns its trimmed output.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ListRange is the commits after good up to bad in a list of full commits,
// one a line oldest first (blank lines and lines starting with # are
// skipped), with good and bad (full, or a prefix of one listed commit)
// resolved to the listed commits.
func ListRange(data []byte, good, bad string) (goodFull, badFull string, commits []string, err error) {
	var all []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !protocol.ValidCommit(line) {
			return "", "", nil, fmt.Errorf("%w: line %d %q: want a full commit (40 or 64 lowercase hex digits)", ErrBisectInput, n, truncateText(line, 80))
		}
		all = append(all, line)
	}
	if err := sc.Err(); err != nil {
		return "", "", nil, fmt.Errorf("%w: %v", ErrBisectInput, err)
	}
	find := func(flag, c string) (int, error) {
		at := -1
		for i, full := range all {
			if commitish.MatchString(c) && strings.HasPrefix(full, c) {
				if at >= 0 && all[at] != full {
					return 0, fmt.Errorf("%w: %s %s: names more than one listed commit (%s, %s)", ErrBisectInput, flag, c, all[at], full)
				}
				at = i
			}
		}
		if at < 0 {
			return 0, fmt.Errorf("%w: %s %q: not in the list of commits", ErrBisectInput, flag, c)
		}
		return at, nil
	}
	gi, err := find("--good", good)
	if err != nil {
		return "", "", nil, err
	}
	bi, err := find("--bad", bad)
	if err != nil {
		return "", "", nil, err
	}
	if gi < bi {
		commits = all[gi+1 : bi+1]
	}
	if err := checkRange(all[gi], all[bi], commits); err != nil {
		return "", "", nil, err
	}
	return all[gi], all[bi], commits, nil
}

func checkRange(good, bad string, commits []string) error {
	if len(commits) == 0 || commits[len(commits)-1] != bad {
		return fmt.Errorf("%w: no commits between --good %s and --bad %s: the good commit must be an ancestor of (listed before) the bad one", ErrBisectInput, runstate.ShortCommit(good), runstate.ShortCommit(bad))
	}
	for _, c := range commits {
		if c == good {
			return fmt.Errorf("%w: commit %s is listed twice", ErrBisectInput, good)
		}
	}
	return nil
}

// truncateText cuts s to at most n bytes, on a rune boundary (never
// within a UTF-8 sequence), with an ellipsis when it cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
