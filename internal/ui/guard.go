package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// LoopbackHosts are the host names the dashboard always answers: the
// loopback names and addresses, on any port.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// operatorCookie is the cookie an operator's login sets: an HMAC of the
// actions token and the process's secret, so it ends with the process and
// never carries the token itself.
const operatorCookie = "benchfleet_operator"

// Server timeouts when Config leaves them zero.
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultReadTimeout       = 30 * time.Second
	defaultWriteTimeout      = 2 * time.Minute
	defaultIdleTimeout       = 2 * time.Minute
)

// hostAllowed reports whether the request's Host is one the dashboard
// serves: a loopback name or address, or one of Config.AllowHosts (a
// name matches on any port, a name:port only on that port; "*" matches
// every host).
func (s *Server) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	for _, a := range LoopbackHosts {
		if name == a {
			return true
		}
	}
	for _, a := range s.cfg.AllowHosts {
		a = strings.ToLower(a)
		if a == "*" || a == host || strings.Trim(a, "[]") == name {
			return true
		}
	}
	return false
}

// refuseHost answers a request for a host the dashboard does not serve
// (a DNS rebinding attempt, or a name the operator did not allow).
func refuseHost(w http.ResponseWriter, host string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "421 misdirected request: this dashboard does not serve host %q (only loopback names and the --allow-host names); "+
		"start it with --allow-host %s to serve this name\n", host, hostOnly(host))
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// safeBack is where an action redirects to: back when it is a path on
// this site ("/runs/x"), else "/". A path that a browser could read as
// another site ("//evil", "/\evil", "/%5Cevil" is fine: it stays a path)
// or that carries a scheme, a host or control characters is refused.
func safeBack(back string) string {
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\") {
		return "/"
	}
	for _, r := range back {
		if r < 0x20 || r == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return back
}

// operatorValue is the operator cookie's value for this process.
func (s *Server) operatorValue() string {
	m := hmac.New(sha256.New, []byte(s.cfg.ActionsToken))
	m.Write([]byte("benchfleet-operator:" + s.csrf))
	return hex.EncodeToString(m.Sum(nil))
}

// bearerKey marks a request whose "Authorization: Bearer" token
// ServeHTTP checked and found right.
type bearerKey struct{}

// bearerToken is the token of r's "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// bearer reports whether r carries "Authorization: Bearer <the actions
// token>" (checked once, under the login limit, by ServeHTTP).
func (s *Server) bearer(r *http.Request) bool {
	ok, _ := r.Context().Value(bearerKey{}).(bool)
	return ok
}

// checkToken compares tok, an operator token a client sent (via: "login"
// or "bearer"), with the actions token in constant time, under the login
// limit. On false it has answered the request: 429 with Retry-After when
// the client (or every client) has used up its attempts, without
// comparing; 401 for a wrong token, logged with the client's address and
// never the token it sent.
func (s *Server) checkToken(w http.ResponseWriter, r *http.Request, tok, via string) bool {
	client := clientKey(r.RemoteAddr)
	ok, retry, first := s.limit.take(client)
	if !ok {
		if first {
			s.cfg.Log.Warn().Str("component", "ui").Str("client", client.String()).Str("via", via).Dur("retry_after", retry).
				Msg("operator token attempts refused: login rate limit reached")
		}
		w.Header().Set("Retry-After", retryAfter(retry))
		http.Error(w, "429 too many operator token attempts: try again in "+retryAfter(retry)+" s", http.StatusTooManyRequests)
		return false
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.ActionsToken)) == 1 {
		s.limit.refund(client)
		return true
	}
	s.cfg.Log.Warn().Str("component", "ui").Str("client", client.String()).Str("remote", r.RemoteAddr).Str("via", via).
		Int("token_len", len(tok)).Msg("wrong operator token")
	if via == "bearer" {
		http.Error(w, "wrong bearer token: send Authorization: Bearer with the operator token", http.StatusUnauthorized)
	} else {
		http.Error(w, "wrong operator token: go back and try again", http.StatusUnauthorized)
	}
	return false
}

// sessionCookie is the operator cookie with value and maxAge: HttpOnly
// (no script reads it), SameSite=Strict (a request another site starts,
// a link followed included, carries none: the cookie only authorizes
// actions, and pages read the same without it) and Secure when the
// request came over TLS or the dashboard's public URL is https.
func (s *Server) sessionCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: operatorCookie, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.secureCookie}
}

// operator reports whether r comes from a logged-in operator: the
// operator cookie of this process, or the bearer token.
func (s *Server) operator(r *http.Request) bool {
	if !s.cfg.Actions || s.cfg.ActionsToken == "" {
		return false
	}
	if s.bearer(r) {
		return true
	}
	c, err := r.Cookie(operatorCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.operatorValue())) == 1
}

// authorize checks that an action may run: actions on, a token
// configured, and the request from an operator. It has answered the
// request when it returns false.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case !s.cfg.Actions:
		http.Error(w, "read-only: start the server with --actions to allow this", http.StatusForbidden)
		return false
	case s.cfg.ActionsToken == "":
		http.Error(w, "actions are refused: no operator token is configured (start the server with --actions-token-file FILE or BENCHFLEET_ACTIONS_TOKEN)", http.StatusForbidden)
		return false
	case !s.operator(r):
		http.Error(w, "not logged in: log in at /login with the operator token (or send Authorization: Bearer TOKEN)", http.StatusUnauthorized)
		return false
	}
	return true
}

type loginData struct {
	Back    string
	Enabled bool
}

// loginPage shows the operator login form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "login", "log in", false, loginData{Back: safeBack(r.URL.Query().Get("back")), Enabled: s.cfg.Actions && s.cfg.ActionsToken != ""})
}

// login checks the operator token of the login form (checkToken: rate
// limited) and sets the operator cookie (sessionCookie, for this
// process's life).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Actions || s.cfg.ActionsToken == "" {
		s.authorize(w, r)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
	}
	back := safeBack(r.PostFormValue("back"))
	if !s.checkToken(w, r, r.PostFormValue("token"), "login") {
		return
	}
	http.SetCookie(w, s.sessionCookie(r, s.operatorValue(), 0))
	http.Redirect(w, r, back+"?flash="+url.QueryEscape("logged in: actions enabled"), http.StatusSeeOther)
}

// logout ends the operator's cookie (an action: it needs the login and
// the CSRF token).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) (string, error) {
	http.SetCookie(w, s.sessionCookie(r, "", -1))
	return "logged out", nil
}

// httpServer is the http.Server Serve runs: the dashboard behind the
// Host check, with Config's timeouts.
func (s *Server) httpServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout}
}

// fillTimeouts sets the zero timeouts of cfg to their defaults.
func fillTimeouts(cfg *Config) {
	for _, f := range []struct {
		p *time.Duration
		d time.Duration
	}{{&cfg.ReadHeaderTimeout, defaultReadHeaderTimeout}, {&cfg.ReadTimeout, defaultReadTimeout},
		{&cfg.WriteTimeout, defaultWriteTimeout}, {&cfg.IdleTimeout, defaultIdleTimeout}} {
		if *f.p == 0 {
			*f.p = f.d
		}
	}
}
