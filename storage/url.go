package storage

import (
	"errors"
	"net/url"
	"strings"

	"github.com/benchfleet/benchfleet/internal/redact"
)

// ErrBadStoreURL is matched (errors.Is) by the error of opening a store
// URL that names no store it can open: a bad scheme, file URL, bucket,
// query or parameter. The URL's owner must fix it; retrying cannot help.
var ErrBadStoreURL = errors.New("storage: bad store URL")

// BadURL returns err, with its own text, marked as an error of the store
// URL itself: it matches ErrBadStoreURL (and whatever err matches).
func BadURL(err error) error { return badURLError{err} }

// badURLError is an error of the store URL itself, with its own text.
type badURLError struct{ err error }

func (e badURLError) Error() string        { return e.err.Error() }
func (e badURLError) Unwrap() error        { return e.err }
func (e badURLError) Is(target error) bool { return target == ErrBadStoreURL }

// Redact removes user info (of the URL and of any URL in its query, such
// as endpoint=) and secret-looking query parameters from a URL so it can
// be logged or shown in an error. A URL that does not parse is shown with
// its user info removed as text.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return redact.Userinfo(rawURL)
	}
	if u.User != nil {
		u.User = url.User(redact.Mark)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return redact.Userinfo(rawURL)
	}
	for k, vs := range q {
		lk := strings.ToLower(k)
		secret := strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "password")
		for i, v := range vs {
			if secret {
				vs[i] = redact.Mark
			} else {
				vs[i] = redact.Userinfo(v)
			}
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
