package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

// ErrBadAccept matches an acceptance that cannot be made as asked: a
// series name that does not parse or names no series, no open regression
// at the commit (a usage error).
var ErrBadAccept = errors.New("cannot accept")

// AcceptOptions are what `benchfleet results accept` is given.
type AcceptOptions struct {
	// Series is the series' display name, model/pool/bs<N>/<format>
	// (Series.Name); Test and Runner pick one when several series share it.
	Series       string
	Test, Runner string
	// Commit is the step's first commit (a unique prefix will do), Reason
	// why it is accepted, By who accepts it (default $USER@host).
	Commit, Reason, By string
	// Gate is the gate the series is cut by (defaults filled).
	Gate GateConfig
	// Now is the record's time (zero: time.Now()).
	Now time.Time
}

// ParseSeriesName reads a series' display name, model/pool/bs<N>/<format>
// (Series.Name); the model may hold slashes.
func ParseSeriesName(name string) (Series, error) {
	parts := strings.Split(name, "/")
	if len(parts) < 4 {
		return Series{}, fmt.Errorf("%w: series %q: want model/pool/bs<N>/<format>, e.g. resnet50/n150/bs8/bfloat16", ErrBadAccept, name)
	}
	n := len(parts)
	bs, err := strconv.Atoi(strings.TrimPrefix(parts[n-2], "bs"))
	if !strings.HasPrefix(parts[n-2], "bs") || err != nil || bs < 1 {
		return Series{}, fmt.Errorf("%w: series %q: %q is not a batch size like bs8", ErrBadAccept, name, parts[n-2])
	}
	s := Series{Model: strings.Join(parts[:n-3], "/"), Pool: parts[n-3], BatchSize: bs, DataFormat: parts[n-1]}
	if s.Model == "" || s.Pool == "" || s.DataFormat == "" {
		return Series{}, fmt.Errorf("%w: series %q: model, pool and format must not be empty", ErrBadAccept, name)
	}
	return s, nil
}

// AcceptOpen accepts the open regression of series o.Series that began at
// o.Commit: it reads the series' history on the gate's baseline branch
// through history, finds the step, and writes its acceptance record to b
// (write-once: a second acceptance is ErrAccepted). It returns the
// regression as accepted.
func AcceptOpen(ctx context.Context, b storage.Bucket, history HistoryFunc, o AcceptOptions) (*OpenRegression, error) {
	s, err := ParseSeriesName(o.Series)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Reason) == "" {
		return nil, fmt.Errorf("%w: --reason: say why the new level is accepted", ErrBadAccept)
	}
	if o.Commit == "" {
		return nil, fmt.Errorf("%w: --at: give the first commit of the step (its open regression's \"since\")", ErrBadAccept)
	}
	rs, err := history(ctx, index.Filter{Model: s.Model, Pool: s.Pool, Branch: o.Gate.BaselineBranch})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", o.Series, err)
	}
	var match []Series
	seen := map[Series]bool{}
	for _, r := range rs {
		c := SeriesOf(r)
		if c.Name() == s.Name() && (o.Test == "" || c.Test == o.Test) && (o.Runner == "" || c.Runner == o.Runner) && !seen[c] {
			seen[c] = true
			match = append(match, c)
		}
	}
	switch {
	case len(match) == 0:
		return nil, fmt.Errorf("%w: no results of series %s on %s", ErrBadAccept, o.Series, o.Gate.BaselineBranch)
	case len(match) > 1:
		var names []string
		for _, m := range match {
			names = append(names, fmt.Sprintf("--runner %s --test %q", m.Runner, m.Test))
		}
		return nil, fmt.Errorf("%w: %d series are named %s; pick one with %s", ErrBadAccept, len(match), o.Series, strings.Join(names, " or "))
	}
	as, _, err := ReadAcceptances(ctx, b)
	if err != nil {
		return nil, err
	}
	_, open := SeriesOpen(rs, match[0], o.Gate, as)
	var found *OpenRegression
	var since []string
	for i := range open {
		if strings.HasPrefix(open[i].Since, o.Commit) && open[i].Since != "" {
			if found != nil {
				return nil, fmt.Errorf("%w: --at %s: more than one step begins with it; give more of the commit", ErrBadAccept, o.Commit)
			}
			found = &open[i]
		}
		since = append(since, cmp.Or(open[i].Since, "(no commit, run "+open[i].SinceRun+")"))
	}
	if found == nil {
		if len(since) == 0 {
			return nil, fmt.Errorf("%w: series %s has no open regression on %s", ErrBadAccept, o.Series, o.Gate.BaselineBranch)
		}
		return nil, fmt.Errorf("%w: series %s has no open regression since %s (it has: since %s)", ErrBadAccept, o.Series, o.Commit, strings.Join(since, ", since "))
	}
	a := Acceptance{Series: match[0], Commit: found.Since, Reason: strings.TrimSpace(o.Reason), By: o.By, At: o.Now}
	if a.By == "" {
		a.By = whoAmI()
	}
	if a.At.IsZero() {
		a.At = time.Now().UTC()
	}
	if err := Accept(ctx, b, a); err != nil {
		return nil, err
	}
	found.Accepted = &a
	return found, nil
}

// whoAmI names the person or job accepting: $GITHUB_ACTOR, else $USER,
// else the uid's user name (else the uid), @ this host.
func whoAmI() string {
	who := cmp.Or(os.Getenv("GITHUB_ACTOR"), os.Getenv("USER"))
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = cmp.Or(u.Username, "uid "+u.Uid)
		}
	}
	host, _ := os.Hostname()
	return cmp.Or(who, fmt.Sprintf("uid %d", os.Getuid())) + "@" + host
}
