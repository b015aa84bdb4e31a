package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/benchfleet/benchfleet/internal/ui"
)

// rebindBrowser is headless Chromium resolving rebind.test to 127.0.0.1,
// as a DNS-rebinding attacker's name would (skipped without Chromium
// unless BENCHFLEET_REQUIRE_BROWSER=1).
func rebindBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		msg := fmt.Sprintf("no Chromium at %s (install it with scripts/install-chromium.sh, run by `make tools`)", chromium)
		if os.Getenv("BENCHFLEET_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + "; BENCHFLEET_REQUIRE_BROWSER=1 requires it")
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// In a real browser: a page loaded under a rebound name gets the 421
// refusal, not the dashboard; on 127.0.0.1 a visitor sees no buttons and
// a log-in link, logs in with the operator token, and then sees the
// actions; a log-in whose back field points off-site ("/\rebind.test/")
// stays on the server.
func TestBrowserHostAllowlistAndLogin(t *testing.T) {
	ctx := rebindBrowser(t)
	cfg := bareConfig(t)
	cfg.Actions, cfg.ActionsToken, cfg.Refresh = true, testToken, -1
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	u, _ := url.Parse(hs.URL)
	b := &drive{t: t, ctx: ctx}

	b.do(chromedp.Navigate("http://rebind.test:"+u.Port()+"/"), chromedp.WaitReady("body"))
	if body := b.text("body"); !strings.Contains(body, "misdirected") || strings.Contains(body, "fleet & runs") {
		t.Errorf("the dashboard under a rebound name: %q, want the 421 refusal", body)
	}

	b.do(chromedp.Navigate(hs.URL+"/dlq"), chromedp.WaitVisible("#login"))
	if n := evalJS[int](b, `document.querySelectorAll('#logout, input[name=csrf]').length`); n != 0 {
		t.Errorf("a visitor's page has %d action elements, want none", n)
	}
	b.do(chromedp.Click("#login", chromedp.NodeVisible), chromedp.WaitVisible("#token"))
	b.do(chromedp.SetValue(`input[name=back]`, `/\rebind.test/`),
		chromedp.SendKeys("#token", cfg.ActionsToken),
		chromedp.Click("#login-submit", chromedp.NodeVisible), chromedp.WaitVisible("#logout"))
	loc := evalJS[string](b, `location.host + location.pathname`)
	if loc != u.Host+"/" {
		t.Errorf("after the log-in the browser is at %q, want %q", loc, u.Host+"/")
	}
	if flash := b.text("#flash"); !strings.Contains(flash, "logged in") {
		t.Errorf("flash after the log-in: %q", flash)
	}
	b.do(chromedp.Click("#logout", chromedp.NodeVisible), chromedp.WaitVisible("#login"))
}
