package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/ui"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/index"
)

func serve(t *testing.T, cfg ui.Config) *httptest.Server {
	t.Helper()
	s, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func post(t *testing.T, u string, form url.Values, origin string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Read-only by default: a cancel is refused without --actions, and with
// actions without the page's CSRF token or from another origin (for a
// logged-in operator); with both the run is cancelled. Artifacts are served from artifacts/ only.
func TestActionsNeedFlagAndToken(t *testing.T) {
	cfg, submit := newFarm(t)
	submit("ui-cancel", fleettest.SimJobs(t, "ui-cancel", 4, map[string]string{"sim.duration": "30s"}))
	ro := serve(t, cfg)
	cfg.Actions, cfg.ActionsToken = true, testToken
	rw := serve(t, cfg)
	op := operatorLogin(t, rw.URL, cfg.ActionsToken)

	if code, body := get(t, ro.URL+"/runs/ui-cancel"); code != 200 || strings.Contains(body, "cancel run") {
		t.Fatalf("read-only run page: %d, has a cancel button: %v", code, strings.Contains(body, "cancel run"))
	}
	if code := post(t, ro.URL+"/runs/ui-cancel/cancel", url.Values{}, ""); code != http.StatusForbidden {
		t.Errorf("cancel on a read-only server: %d, want 403", code)
	}
	_, _, body := do(t, http.MethodGet, rw.URL+"/runs/ui-cancel", nil, op, nil)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the run page of an actions server:\n%s", body)
	}
	if code, _, _ := do(t, http.MethodPost, rw.URL+"/runs/ui-cancel/cancel", url.Values{"csrf": {"0000"}}, op, nil); code != http.StatusForbidden {
		t.Errorf("cancel with a wrong token: %d, want 403", code)
	}
	if code, _, _ := do(t, http.MethodPost, rw.URL+"/runs/ui-cancel/cancel", url.Values{"csrf": {m[1]}}, op, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("cancel from another origin: %d, want 403", code)
	}
	if _, err := cfg.Topology.Runs.Get(t.Context(), protocol.CancelKey("ui-cancel")); err == nil {
		t.Fatal("the run was cancelled by a refused request")
	}
	if code, _, _ := do(t, http.MethodPost, rw.URL+"/runs/ui-cancel/cancel", url.Values{"csrf": {m[1]}, "back": {"/runs/ui-cancel"}}, op, map[string]string{"Origin": rw.URL}); code != http.StatusSeeOther {
		t.Fatalf("cancel with the token: %d, want 303", code)
	}
	if _, err := cfg.Topology.Runs.Get(t.Context(), protocol.CancelKey("ui-cancel")); err != nil {
		t.Fatalf("run not cancelled: %v", err)
	}
	fleettest.Eventually(t, 30*time.Second, "the cancelled run's page", func() bool {
		_, body := get(t, ro.URL+"/runs/ui-cancel")
		return strings.Contains(body, `id="run-state">cancelled`)
	})

	if err := storage.PutJSON(t.Context(), cfg.Store, "results/v1/secret.json", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/artifacts/../results/v1/secret.json", "/artifacts/%2e%2e/results/v1/secret.json"} {
		if code, body := get(t, ro.URL+p); code == 200 {
			t.Errorf("GET %s served %q", p, body)
		}
	}
}

// BenchmarkSeriesPage100k times the series page on a store of 100,000
// synthetic results over a year, compacted into the Parquet index
// (index.WriteSynth, index.Compact): run with
// go test -run '^$' -bench SeriesPage ./internal/ui/
func BenchmarkSeriesPage100k(b *testing.B) {
	dir := b.TempDir()
	store, err := file.NewBucket(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	end := time.Now().UTC()
	start := time.Now()
	if err := index.WriteSynth(ctx, store, index.SynthOptions{Results: 100000, Days: 365, End: end}); err != nil {
		b.Fatal(err)
	}
	if _, err := index.Compact(ctx, store, index.CompactOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("100,000 results written and compacted in %s", time.Since(start).Round(time.Millisecond))
	r := index.SynthResult(99999, index.SynthOptions{Results: 100000, Days: 365, End: end})
	srv := fleettest.Server(b)
	_, js := fleettest.Connect(b, srv.ClientURL())
	topo := fleettest.Topology(b, js, topologyConfig())
	s, err := ui.New(ui.Config{JS: js, Topology: topo, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	u := "/series?model=" + r.Benchmark.Model + "&pool=" + r.Pool + "&batch=" + itoa(r.Benchmark.BatchSize) +
		"&format=" + r.Benchmark.DataFormat + "&runner=" + r.Runner + "&test=" + url.QueryEscape(r.Benchmark.Test)
	points := 0
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, u, nil)
		req.Host = "127.0.0.1" // the dashboard serves loopback names only
		s.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%s: %d %s", u, rec.Code, rec.Body.String())
		}
		points = strings.Count(rec.Body.String(), `class="point"`)
	}
	b.ReportMetric(float64(points), "points")
}
