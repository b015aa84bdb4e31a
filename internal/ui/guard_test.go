package ui_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/storage/file"
)

// bareConfig is a dashboard's Config over an empty farm (no worker).
func bareConfig(t *testing.T) ui.Config {
	t.Helper()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	store, err := file.NewBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ui.Config{JS: js, Topology: fleettest.Topology(t, js, topologyConfig()), Store: store}
}

func newServer(t *testing.T, cfg ui.Config) *ui.Server {
	t.Helper()
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hostCode(s http.Handler, host, path string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// A request for a name the operator did not allow (a DNS-rebound name
// resolving to 127.0.0.1) is refused with 421 and the flag that allows
// it; loopback names and addresses are served on any port, and
// --allow-host names besides.
func TestHostAllowlist(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	s := newServer(t, cfg)
	for _, h := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "localhost", "LOCALHOST:1"} {
		if code, body := hostCode(s, h, "/dlq"); code != http.StatusOK {
			t.Errorf("Host %s: %d %s, want 200", h, code, body)
		}
	}
	for _, h := range []string{"evil.example:8080", "evil.example", "127.0.0.1.evil.example:8080", "localhost.evil.example", ""} {
		code, body := hostCode(s, h, "/dlq")
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, "--allow-host") {
			t.Errorf("Host %q: %d %q, want 421 naming --allow-host", h, code, body)
		}
	}
	cfg.AllowHosts = []string{"bench.example", "ops.example:9000"}
	s = newServer(t, cfg)
	for h, want := range map[string]int{"bench.example:8080": 200, "bench.example": 200, "ops.example:9000": 200,
		"ops.example:9001": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest} {
		if code, _ := hostCode(s, h, "/dlq"); code != want {
			t.Errorf("allowing %v, Host %s: %d, want %d", cfg.AllowHosts, h, code, want)
		}
	}
}

// operatorLogin logs in at base with token and returns the operator
// cookie.
func operatorLogin(t *testing.T, base, token string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {token}, "back": {"/dlq"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d, want 303", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "benchfleet_operator" {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, token) {
				t.Errorf("operator cookie %+v: want HttpOnly, SameSite=Strict, without the token", c)
			}
			return c
		}
	}
	t.Fatal("login set no operator cookie")
	return nil
}

// do sends a request with the operator cookie (nil: none) and headers,
// without following redirects; it returns the code, the Location and the
// body.
func do(t *testing.T, method, u string, form url.Values, c *http.Cookie, hdr map[string]string) (int, string, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c != nil {
		req.AddCookie(c)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// Actions need the operator token: without one configured every action
// is refused with the reason; with one, a request without the login is
// refused (401), a wrong token does not log in, and the operator's cookie
// (with the CSRF token) or the bearer token act. The buttons show only to
// a logged-in operator.
func TestActionsNeedOperatorToken(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.Actions = true
	notok := serve(t, cfg)
	code, _, body := do(t, http.MethodPost, notok.URL+"/dlq/x/retry", url.Values{}, nil, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "BENCHFLEET_ACTIONS_TOKEN") {
		t.Errorf("action without a configured token: %d %q, want 403 naming the token", code, body)
	}
	cfg.ActionsToken = testToken
	hs := serve(t, cfg)
	_, _, page := do(t, http.MethodGet, hs.URL+"/dlq", nil, nil, nil)
	if !strings.Contains(page, `href="/login"`) {
		t.Errorf("page for a visitor has no login link:\n%s", page)
	}
	m := csrfRe.FindStringSubmatch(page)
	if m != nil {
		t.Errorf("page for a visitor who did not log in carries the CSRF token")
	}
	if code, _, _ := do(t, http.MethodPost, hs.URL+"/login", url.Values{"token": {"guess"}}, nil, nil); code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d, want 401", code)
	}
	c := operatorLogin(t, hs.URL, cfg.ActionsToken)
	tok := csrfOf(t, hs, c)
	if code, _, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{"csrf": {tok}}, nil, nil); code != http.StatusUnauthorized {
		t.Errorf("action with the CSRF token but no login: %d, want 401", code)
	}
	if code, loc, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{"csrf": {tok}, "back": {"/dlq"}}, c, nil); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/dlq?flash=") {
		t.Errorf("operator's action: %d %q, want 303 to /dlq", code, loc)
	}
	if code, _, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{}, c, nil); code != http.StatusForbidden {
		t.Errorf("operator's action without the CSRF token: %d, want 403", code)
	}
	if code, _, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{}, nil, map[string]string{"Authorization": "Bearer " + cfg.ActionsToken}); code != http.StatusSeeOther {
		t.Errorf("action with the bearer token: %d, want 303", code)
	}
	if code, _, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{}, nil, map[string]string{"Authorization": "Bearer nope"}); code != http.StatusUnauthorized {
		t.Errorf("action with a wrong bearer token: %d, want 401", code)
	}
	code, _, _ = do(t, http.MethodPost, hs.URL+"/logout", url.Values{"csrf": {tok}}, c, nil)
	if code != http.StatusSeeOther {
		t.Errorf("log out: %d, want 303", code)
	}
}

// csrfOf is the CSRF token the operator's pages carry (every page has
// the log-out form).
func csrfOf(t *testing.T, hs *httptest.Server, c *http.Cookie) string {
	t.Helper()
	_, _, page := do(t, http.MethodGet, hs.URL+"/dlq", nil, c, nil)
	if m := csrfRe.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	t.Fatalf("no CSRF token on the operator's page:\n%s", page)
	return ""
}

// An action redirects only to a path of this site: "//evil", "/\evil",
// a scheme or control characters send the browser to "/" instead.
func TestActionRedirectStaysOnSite(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.Actions, cfg.ActionsToken = true, testToken
	hs := serve(t, cfg)
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	for back, want := range map[string]string{
		"/dlq": "/dlq?", "/runs/r1": "/runs/r1?",
		`/\evil.example`: "/?", `/\/evil.example`: "/?", "//evil.example": "/?", "///evil.example": "/?",
		"https://evil.example": "/?", "evil.example": "/?", "/\t/evil.example": "/?", "/\n/evil.example": "/?",
		"": "/?", `\\evil.example`: "/?",
	} {
		code, loc, _ := do(t, http.MethodPost, hs.URL+"/dlq/x/retry", url.Values{"back": {back}}, nil, bearer)
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, want) {
			t.Errorf("back=%q: %d Location %q, want prefix %q", back, code, loc, want)
		}
	}
	code, loc, _ := do(t, http.MethodPost, hs.URL+"/login", url.Values{"token": {testToken}, "back": {`/\evil.example`}}, nil, nil)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/?") {
		t.Errorf("login back=/\\evil: %d %q, want /", code, loc)
	}
}

// A client that sends a request's headers and then stalls on its body is
// cut off by the server's read timeout instead of holding the connection.
func TestServeTimesOutStalledClients(t *testing.T) {
	t.Parallel()
	cfg := bareConfig(t)
	cfg.ReadTimeout = 200 * time.Millisecond
	s := newServer(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken="); err != nil {
		t.Fatal(err)
	}
	// The test's own bound, far beyond the server's: reaching it means the
	// server never gave up on the stalled body.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.ReadAll(bufio.NewReader(conn))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a stalled connection open: no read timeout")
	}
}
