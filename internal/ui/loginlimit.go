package ui

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// MinTokenLen is the shortest operator token the dashboard accepts, in
// bytes: 32 bytes of hex (`openssl rand -hex 32` gives 64) are beyond any
// guessing at the login's rate limit.
const MinTokenLen = 32

// CheckToken says why tok cannot be an operator token (nil when it can):
// it must be at least MinTokenLen bytes.
func CheckToken(tok string) error {
	if len(tok) < MinTokenLen {
		return fmt.Errorf("the operator token is %d bytes, it must be at least %d: make one with `openssl rand -hex 32`", len(tok), MinTokenLen)
	}
	return nil
}

// Rate is a token bucket: Burst attempts at once, then one more every
// Every.
type Rate struct {
	Burst int
	Every time.Duration
}

// LoginLimit bounds the operator-token checks (a /login form, an
// "Authorization: Bearer" header): each client address (an IPv4 address,
// an IPv6 /64) has its bucket, and all clients share the global one. A
// check takes a token from both and a right token gives them back, so only
// failures spend the budget; with either bucket empty the request is
// answered 429 with Retry-After and the token is not compared at all.
type LoginLimit struct {
	PerClient Rate
	Global    Rate
}

// DefaultLoginLimit is Config.LoginLimit's default: 10 failures at once
// from one address, then one every 6 s (10 a minute); 100 at once from
// everyone, then one a second.
var DefaultLoginLimit = LoginLimit{PerClient: Rate{Burst: 10, Every: 6 * time.Second}, Global: Rate{Burst: 100, Every: time.Second}}

// maxClients is how many client buckets the limiter keeps before it drops
// the full ones.
const maxClients = 4096

// bucket is one token bucket: tokens at the time at.
type bucket struct {
	tokens float64
	at     time.Time
	warned bool // the refusal of this bucket's client was logged
}

// fill brings b up to now under rate r.
func (b *bucket) fill(r Rate, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(float64(r.Burst), b.tokens+float64(d)/float64(r.Every))
	}
	b.at = now
}

// wait is how long until b has a whole token under r.
func (b *bucket) wait(r Rate) time.Duration {
	return time.Duration((1 - b.tokens) * float64(r.Every))
}

// loginLimiter is a LoginLimit's state.
type loginLimiter struct {
	cfg     LoginLimit
	now     func() time.Time
	mu      sync.Mutex
	global  bucket
	clients map[netip.Prefix]*bucket
}

func newLoginLimiter(cfg LoginLimit, now func() time.Time) *loginLimiter {
	return &loginLimiter{cfg: cfg, now: now, global: bucket{tokens: float64(cfg.Global.Burst), at: now()}, clients: map[netip.Prefix]*bucket{}}
}

// clientKey is the bucket key of a request's remote address: the IPv4
// address, or the /64 of an IPv6 one (one host gets a whole /64).
func clientKey(remoteAddr string) netip.Prefix {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// take reserves one check for client. ok is false when a bucket is empty:
// retry is then how long until both have a token, and first is true for
// the first refusal of this client since its last allowed check (the
// one worth logging).
func (l *loginLimiter) take(client netip.Prefix) (ok bool, retry time.Duration, first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.global.fill(l.cfg.Global, now)
	c := l.clients[client]
	if c == nil {
		if len(l.clients) >= maxClients {
			l.prune(now)
		}
		c = &bucket{tokens: float64(l.cfg.PerClient.Burst), at: now}
		l.clients[client] = c
	}
	c.fill(l.cfg.PerClient, now)
	if c.tokens < 1 || l.global.tokens < 1 {
		retry = max(c.wait(l.cfg.PerClient), l.global.wait(l.cfg.Global))
		first, c.warned = !c.warned, true
		return false, retry, first
	}
	c.tokens--
	l.global.tokens--
	c.warned = false
	return true, 0, false
}

// refund gives back the check of a right token.
func (l *loginLimiter) refund(client netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global.tokens = math.Min(float64(l.cfg.Global.Burst), l.global.tokens+1)
	if c := l.clients[client]; c != nil {
		c.tokens = math.Min(float64(l.cfg.PerClient.Burst), c.tokens+1)
	}
}

// prune drops the client buckets that are full again (a full bucket is
// the same as none). What stays are the clients that spent tokens lately,
// and spending one takes one of the global bucket too, so the global rate
// bounds them.
func (l *loginLimiter) prune(now time.Time) {
	for k, b := range l.clients {
		b.fill(l.cfg.PerClient, now)
		if b.tokens >= float64(l.cfg.PerClient.Burst) {
			delete(l.clients, k)
		}
	}
}

// retryAfter is a Retry-After header's value for d: whole seconds, at
// least 1.
func retryAfter(d time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(d.Seconds()))))
}

// loginLimit is l with DefaultLoginLimit's rates for its zero parts; a
// rate with a negative or zero part (not both) is an error.
func loginLimit(l LoginLimit) (LoginLimit, error) {
	for _, p := range []struct {
		name string
		r    *Rate
		def  Rate
	}{{"PerClient", &l.PerClient, DefaultLoginLimit.PerClient}, {"Global", &l.Global, DefaultLoginLimit.Global}} {
		switch {
		case *p.r == Rate{}:
			*p.r = p.def
		case p.r.Burst < 1 || p.r.Every <= 0:
			return l, fmt.Errorf("ui: Config.LoginLimit.%s %+v: want a burst of at least 1 and a positive interval", p.name, *p.r)
		}
	}
	return l, nil
}

// publicURL checks cfg.PublicURL, adds its host to cfg.AllowHosts and
// reports whether it is https (the operator cookie is then Secure).
func publicURL(cfg *Config) (bool, error) {
	if cfg.PublicURL == "" {
		return false, nil
	}
	u, err := parsePublicURL(cfg.PublicURL)
	if err != nil {
		return false, err
	}
	cfg.AllowHosts = append(cfg.AllowHosts[:len(cfg.AllowHosts):len(cfg.AllowHosts)], u.Host)
	return u.Scheme == "https", nil
}

// CheckPublicURL is the error New gives for raw as Config.PublicURL
// (nil: fine), for a command to check its flag before it connects.
func CheckPublicURL(raw string) error {
	if raw == "" {
		return nil
	}
	_, err := parsePublicURL(raw)
	return err
}

func parsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &PublicURLError{URL: raw}
	}
	return u, nil
}

// PublicURLError is New's error for a Config.PublicURL that is not an
// http(s) URL with a host.
type PublicURLError struct{ URL string }

func (e *PublicURLError) Error() string {
	return fmt.Sprintf("public URL %q: want http(s)://HOST[:PORT]/, e.g. https://bench.example.com/", e.URL)
}
