package ui_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/ui"
)

// testToken is an operator token of the accepted length (ui.MinTokenLen).
const testToken = "0123456789abcdef0123456789abcdef-operator"

// An operator token shorter than 32 bytes is refused when actions are
// on, with the rule and how to make one; 32 bytes and a made one pass.
func TestShortOperatorTokenRefused(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.Actions = true
	for _, tok := range []string{"tok", "s3cret-operator-token", strings.Repeat("x", ui.MinTokenLen-1)} {
		cfg.ActionsToken = tok
		_, err := ui.New(cfg)
		if err == nil || !strings.Contains(err.Error(), "at least 32") || !strings.Contains(err.Error(), "openssl rand -hex 32") {
			t.Errorf("token of %d bytes: %v, want refused naming the rule and openssl rand -hex 32", len(tok), err)
		}
	}
	made, err := ui.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{strings.Repeat("x", ui.MinTokenLen), made} {
		cfg.ActionsToken = tok
		if _, err := ui.New(cfg); err != nil {
			t.Errorf("token of %d bytes: %v", len(tok), err)
		}
	}
	// Read-only, the token is not used: not checked.
	cfg.Actions, cfg.ActionsToken = false, "tok"
	if _, err := ui.New(cfg); err != nil {
		t.Errorf("read-only with a short token: %v", err)
	}
}

// syncBuf is a log sink for the server's logger.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loginFrom posts the login form with token from remote (an address:port)
// to s's handler and returns the response.
func loginFrom(s http.Handler, remote, token string) *http.Response {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/login", strings.NewReader(url.Values{"token": {token}, "back": {"/dlq"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Result()
}

// A burst of wrong logins from one client gets 401s up to the limit and
// then 429 with Retry-After, also for the right token (it is not even
// compared) and for a bearer token; other clients are not held up by it;
// after Retry-After the right token logs in. Failures are logged with
// the client's address and never the token guessed.
func TestLoginRateLimitPerClient(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	logs := &syncBuf{}
	cfg.Actions, cfg.ActionsToken, cfg.Log = true, testToken, zerolog.New(logs)
	cfg.LoginLimit = ui.LoginLimit{PerClient: ui.Rate{Burst: 3, Every: 500 * time.Millisecond}, Global: ui.Rate{Burst: 1000, Every: time.Millisecond}}
	s := newServer(t, cfg)
	const attacker = "192.0.2.7:40000"
	guess := func(i int) string { return "guess-" + strconv.Itoa(i) + "-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }
	for i := range 3 {
		if resp := loginFrom(s, attacker, guess(i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	for i := 3; i < 20; i++ {
		resp := loginFrom(s, attacker, guess(i))
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("wrong login %d past the burst: %d, want 429", i+1, resp.StatusCode)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Fatalf("429 with Retry-After %q, want whole seconds ≥ 1", resp.Header.Get("Retry-After"))
		}
	}
	// From another port of the same address: the same client.
	resp := loginFrom(s, "192.0.2.7:40001", testToken)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token while the client is limited: %d, want 429", resp.StatusCode)
	}
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/dlq", nil)
	req.RemoteAddr, req.Header["Authorization"] = attacker, []string{"Bearer " + testToken}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("bearer token while the client is limited: %d, want 429", rec.Code)
	}
	// Another client logs in.
	if resp := loginFrom(s, "198.51.100.9:5555", testToken); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("another client's right token: %d, want 303", resp.StatusCode)
	}
	time.Sleep(time.Duration(ra) * time.Second)
	resp = loginFrom(s, attacker, testToken)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token after Retry-After (%d s): %d, want 303", ra, resp.StatusCode)
	}
	out := logs.String()
	if strings.Count(out, "wrong operator token") != 3 || !strings.Contains(out, "192.0.2.7") || !strings.Contains(out, "rate limit") {
		t.Errorf("log: want the 3 failures with the client's address and the limit:\n%s", out)
	}
	if strings.Contains(out, "guess-") || strings.Contains(out, testToken) {
		t.Errorf("the log holds a token:\n%s", out)
	}
	// A wrong bearer token is a failed attempt too (401), a right one acts.
	req = httptest.NewRequest(http.MethodGet, "http://127.0.0.1/dlq", nil)
	req.RemoteAddr, req.Header["Authorization"] = "203.0.113.1:1", []string{"Bearer nope"}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong bearer token: %d, want 401", rec.Code)
	}
}

// All clients together are bounded too: guesses spread over many
// addresses (each under its own limit) get 429 once the global bucket is
// empty, and an IPv6 /64 is one client.
func TestLoginRateLimitGlobal(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.Actions, cfg.ActionsToken = true, testToken
	cfg.LoginLimit = ui.LoginLimit{PerClient: ui.Rate{Burst: 2, Every: time.Hour}, Global: ui.Rate{Burst: 10, Every: time.Hour}}
	s := newServer(t, cfg)
	codes := map[int]int{}
	for i := range 30 {
		codes[loginFrom(s, "10.0.0."+strconv.Itoa(i+1)+":1234", "wrong-wrong-wrong-wrong-wrong-wrong").StatusCode]++
	}
	if codes[http.StatusUnauthorized] != 10 || codes[http.StatusTooManyRequests] != 20 {
		t.Errorf("30 wrong logins from 30 addresses under a global burst of 10: %v, want 10×401 and 20×429", codes)
	}
	if resp := loginFrom(s, "10.0.0.200:1", testToken); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token with the global bucket empty: %d, want 429", resp.StatusCode)
	}

	cfg.LoginLimit.Global = ui.Rate{Burst: 100, Every: time.Hour}
	s = newServer(t, cfg)
	for i, a := range []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:2::ffff]:1", "[2001:db8:1:2:aaaa::3]:1"} {
		want := http.StatusUnauthorized
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if resp := loginFrom(s, a, "wrong-wrong-wrong-wrong-wrong-wrong"); resp.StatusCode != want {
			t.Errorf("wrong login %d from %s (one /64): %d, want %d", i+1, a, resp.StatusCode, want)
		}
	}
	if resp := loginFrom(s, "[2001:db8:1:3::1]:1", testToken); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("right token from another /64: %d, want 303", resp.StatusCode)
	}
}

// operatorCookieOf is the operator cookie a response sets.
func operatorCookieOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "benchfleet_operator" {
			return c
		}
	}
	t.Fatalf("response %d sets no operator cookie", resp.StatusCode)
	return nil
}

// The operator cookie is HttpOnly and SameSite=Strict, and Secure when the
// login came over TLS or the public URL is https (behind a TLS proxy);
// not on plain http without one (a browser would drop it). Log-out's
// expiring cookie has the same attributes.
func TestOperatorCookieAttributes(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.Actions, cfg.ActionsToken = true, testToken
	check := func(name string, c *http.Cookie, secure bool) {
		t.Helper()
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != secure || c.Path != "/" || strings.Contains(c.Value, testToken) {
			t.Errorf("%s: cookie %+v, want HttpOnly, SameSite=Strict, Secure=%v, Path=/, without the token", name, c, secure)
		}
	}
	plain := newServer(t, cfg)
	check("plain http", operatorCookieOf(t, loginFrom(plain, "127.0.0.1:1", testToken)), false)

	tlsSrv := httptest.NewTLSServer(newServer(t, cfg))
	t.Cleanup(tlsSrv.Close)
	cl := tlsSrv.Client()
	cl.CheckRedirect = noRedirect.CheckRedirect
	resp, err := cl.PostForm(tlsSrv.URL+"/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	check("over TLS", operatorCookieOf(t, resp), true)

	cfg.PublicURL = "https://bench.example.com/"
	proxied := newServer(t, cfg)
	c := operatorCookieOf(t, loginFrom(proxied, "127.0.0.1:1", testToken))
	check("https public URL", c, true)
	// The public URL's host is answered.
	if code, _ := hostCode(proxied, "bench.example.com", "/dlq"); code != http.StatusOK {
		t.Errorf("Host of the public URL: %d, want 200", code)
	}
	// Log out (with the cookie and the CSRF token) expires the cookie with
	// the same attributes.
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/dlq", nil)
	req.AddCookie(c)
	rec := httptest.NewRecorder()
	proxied.ServeHTTP(rec, req)
	m := csrfRe.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on the operator's page")
	}
	req = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/logout", strings.NewReader(url.Values{"csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(c)
	rec = httptest.NewRecorder()
	proxied.ServeHTTP(rec, req)
	out := operatorCookieOf(t, rec.Result())
	if out.MaxAge >= 0 || !out.HttpOnly || out.SameSite != http.SameSiteStrictMode || !out.Secure {
		t.Errorf("log-out cookie %+v: want expired, HttpOnly, SameSite=Strict, Secure", out)
	}

	for _, bad := range []string{"bench.example.com", "ftp://bench.example.com/", "https:///x", "https://u:p@bench.example.com/"} {
		cfg.PublicURL = bad
		if _, err := ui.New(cfg); err == nil {
			t.Errorf("public URL %q accepted", bad)
		}
	}
}
