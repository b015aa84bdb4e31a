// Package redact hides credentials in URLs and in the errors that echo
// them, for natsconn and storage. It works on the text, not on a parsed
// URL: a password holding '%', '#', '/', '?' or ',' makes URL parsing fail
// or split the URL in the wrong place, and then nothing would be hidden.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mark replaces every hidden secret.
const Mark = "REDACTED"

// Userinfo replaces the user info of every URL in s (after each "://", up
// to the last '@' before the next "://") with REDACTED. A comma-separated
// list of URLs, a URL inside another URL's query, and user info that is
// not valid URL syntax are all covered. Text without "://" is returned as
// it is.
func Userinfo(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		seg := s
		if j := strings.Index(s, "://"); j >= 0 {
			seg = s[:j]
		}
		if at := strings.LastIndex(seg, "@"); at >= 0 {
			b.WriteString(Mark)
			s = s[at:]
		}
	}
}

// Secrets returns the user info of every URL in s, as written and
// percent-decoded, and its password part alone, for Error.
func Secrets(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return out
		}
		s = s[i+3:]
		seg := s
		if j := strings.Index(s, "://"); j >= 0 {
			seg = s[:j]
		}
		if at := strings.LastIndex(seg, "@"); at >= 0 {
			ui := seg[:at]
			// A parser cuts the user info at '#', '/', '?' or ',' and may
			// quote the piece before the cut: hide those pieces too.
			pieces := []string{ui}
			for i, r := range ui {
				if strings.ContainsRune("#/?,", r) {
					pieces = append(pieces, ui[:i])
				}
			}
			for _, p := range pieces {
				out = append(out, p)
				if _, pw, ok := strings.Cut(p, ":"); ok {
					out = append(out, pw)
				}
				if dec, err := url.PathUnescape(p); err == nil && dec != p {
					out = append(out, dec)
				}
			}
		}
	}
}

// Error returns err with every secret in its message replaced by REDACTED
// (errors.Is and errors.As still see err). Empty secrets are ignored;
// nil stays nil.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		// Short secrets would blot out ordinary words.
		if len(s) < 3 {
			continue
		}
		if strings.Contains(msg, s) {
			msg, changed = strings.ReplaceAll(msg, s, Mark), true
		}
	}
	if !changed {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }

// Unwrap exposes the original for errors.Is/As; its message still holds
// the secret, so callers must print the scrubbed error, not the original.
func (e *scrubbed) Unwrap() error { return e.err }

// URLError drops the URL that a *url.Error carries in its message,
// keeping only what went wrong ("invalid URL escape ...").
func URLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
