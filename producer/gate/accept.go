package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// SchemaAcceptance is the schema of an acceptance record.
const SchemaAcceptance = "benchfleet.acceptance/v1"

// Acceptance is a person's word that a series' step down is the new normal
// (`benchfleet results accept`): a write-once record in the store
// (storage.AcceptedKey). The step is no longer listed as open; the series
// is judged against its level, as it was before, so a further drop still
// fails.
type Acceptance struct {
	Schema string `json:"schema"`
	// Series is the series, and SeriesName its display name.
	Series     Series `json:"series"`
	SeriesName string `json:"series_name"`
	// Commit is the first commit of the step (OpenRegression.Since).
	Commit string `json:"commit"`
	Reason string `json:"reason"`
	// By is who accepted it (--by, else $USER@host), At when.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Validate checks a record read from the store (or about to be written).
func (a *Acceptance) Validate() error {
	switch {
	case a.Schema != SchemaAcceptance:
		return fmt.Errorf("acceptance: schema %q, want %q", a.Schema, SchemaAcceptance)
	case protocol.ValidID("commit", a.Commit) != nil:
		return fmt.Errorf("acceptance: %v", protocol.ValidID("commit", a.Commit))
	case strings.TrimSpace(a.Reason) == "" || len(a.Reason) > 2000:
		return errors.New("acceptance: reason must be given, at most 2000 bytes")
	case strings.TrimSpace(a.By) == "" || len(a.By) > 200:
		return errors.New("acceptance: by must be given, at most 200 bytes")
	case a.Series.Model == "" || a.Series.Pool == "":
		return errors.New("acceptance: series has no model or pool")
	}
	return nil
}

// ID is the series' name in store keys: a digest of every field, so that a
// model name with slashes stays one key segment.
func (s Series) ID() string {
	h := sha256.Sum256([]byte(strings.Join([]string{s.Test, s.Model, strconv.Itoa(s.BatchSize), s.DataFormat, s.Pool, s.Runner}, "\x00")))
	return hex.EncodeToString(h[:10])
}

// ErrAccepted matches an acceptance that is already in the store.
var ErrAccepted = errors.New("already accepted")

// Accept writes a's record, once: a second acceptance of the same step is
// ErrAccepted, naming who accepted it first and why.
func Accept(ctx context.Context, b storage.Bucket, a Acceptance) error {
	a.Schema = SchemaAcceptance
	a.SeriesName = a.Series.Name()
	if err := a.Validate(); err != nil {
		return err
	}
	key := storage.AcceptedKey(a.Series.ID(), a.Commit)
	err := storage.PutJSON(ctx, b, key, &a, storage.IfAbsent())
	if errors.Is(err, storage.ErrExists) {
		var old Acceptance
		if gerr := storage.GetJSON(ctx, b, key, &old); gerr == nil {
			return fmt.Errorf("%s at %s: %w by %s on %s: %q", a.SeriesName, a.Commit, ErrAccepted, old.By, old.At.UTC().Format(time.DateTime), old.Reason)
		}
		return fmt.Errorf("%s at %s: %w (%s)", a.SeriesName, a.Commit, ErrAccepted, key)
	}
	if err != nil {
		return fmt.Errorf("accept %s at %s: %w", a.SeriesName, a.Commit, err)
	}
	return nil
}

// maxAcceptances bounds how many records ReadAcceptances reads.
const maxAcceptances = 10_000

// ReadAcceptances reads every acceptance record of the store. A record
// that does not parse, does not validate or lies about its key is skipped
// and named in the returned warnings; a store error is an error.
func ReadAcceptances(ctx context.Context, b storage.Bucket) ([]Acceptance, []string, error) {
	var out []Acceptance
	var warnings []string
	n := 0
	for key, err := range b.List(ctx, storage.PrefixAccepted) {
		if err != nil {
			return nil, nil, fmt.Errorf("acceptances: %w", err)
		}
		if n++; n > maxAcceptances {
			warnings = append(warnings, fmt.Sprintf("more than %d acceptance records: the rest are not read", maxAcceptances))
			break
		}
		a, err := readAcceptance(ctx, b, key)
		if err != nil {
			if errors.Is(err, storage.ErrUnavailable) {
				return nil, nil, err
			}
			warnings = append(warnings, err.Error())
			continue
		}
		out = append(out, a)
	}
	return out, warnings, nil
}

func readAcceptance(ctx context.Context, b storage.Bucket, key string) (Acceptance, error) {
	var a Acceptance
	rc, err := b.Get(ctx, key)
	if err != nil {
		return a, fmt.Errorf("acceptance %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil {
		return a, fmt.Errorf("acceptance %s: %w", key, err)
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("acceptance %s: %v", key, err)
	}
	if err := a.Validate(); err != nil {
		return a, fmt.Errorf("%s: %v", key, err)
	}
	if key != storage.AcceptedKey(a.Series.ID(), a.Commit) {
		return a, fmt.Errorf("acceptance %s: its series and commit belong at another key", key)
	}
	return a, nil
}

// AcceptanceOf is the acceptance of series s's step at commit among as, or
// nil.
func AcceptanceOf(as []Acceptance, s Series, commit string) *Acceptance {
	for i := range as {
		if as[i].Series == s && as[i].Commit == commit {
			return &as[i]
		}
	}
	return nil
}
