// Package ui is benchfleet's web dashboard (`benchfleet serve`, `dev
// --ui`): server-rendered pages over the producer's read models — the
// fleet, the queues, runs and their jobs, a series' history from the
// Parquet index — with every asset embedded in the binary. It is
// read-only unless Config.Actions is set; actions are POSTs of a logged-in
// operator (Config.ActionsToken) carrying the server's CSRF token.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/version"
	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/index"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Server.
type Config struct {
	// JS and Topology reach NATS (required): the bench-workers and
	// bench-runs buckets, the event and dead-letter streams.
	JS       jetstream.JetStream
	Topology *topology.Handles
	// Store holds results and artifacts (required): a job's verdict is
	// its stored result, never an event.
	Store storage.Bucket
	// Gate tunes the regression verdicts shown (zero: the gate's defaults).
	// The dashboard re-queues nothing (it judges whatever repeats a run
	// has); Gate.Repeats is the confirmation its gate line names, the one
	// `submit --gate` gives (0: gate.DefaultRepeats, as --confirm's
	// default; negative: none).
	Gate gate.GateConfig
	// Actions enables cancel, dlq retry and fleet release (POST with the
	// CSRF token) for an operator (ActionsToken). Default false: read-only.
	Actions bool
	// ActionsToken is the operator token actions need: an operator logs
	// in at /login with it (a cookie for this process's life) or sends
	// "Authorization: Bearer TOKEN". Empty: every action is refused, with
	// the reason, even with Actions.
	ActionsToken string
	// LoginLimit bounds the operator-token checks, at /login and of
	// "Authorization: Bearer" headers (zero parts: DefaultLoginLimit's).
	LoginLimit LoginLimit
	// PublicURL is the URL operators reach the dashboard at, e.g. behind a
	// TLS proxy ("https://bench.example.com/"); its host is answered as an
	// AllowHosts one, and when it is https the operator cookie is Secure
	// (it always is on a request that came over TLS). Default: none.
	PublicURL string
	// AllowHosts are the host names (a name on any port, or name:port)
	// the server answers besides LoopbackHosts; "*" allows every host.
	// Any other Host gets 421: a DNS-rebound name cannot reach the pages
	// or the actions. Default: loopback only.
	AllowHosts []string
	// ManifestTTL is how long a bench-runs entry read (a manifest, a cancel
	// flag) is reused by the pages before it is read again (default 2s;
	// negative: every view reads every entry). Actions through the server
	// forget what they change at once.
	ManifestTTL time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout bound a
	// connection served by Serve (defaults 10s, 30s, 2m, 2m).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Refresh is how often live pages reload themselves (default 5s;
	// negative: never).
	Refresh time.Duration
	// RecentRuns is how many of the newest runs the home page shows
	// (default 20).
	RecentRuns int
	// Log receives request errors (default: none).
	Log zerolog.Logger
}

// Server serves the dashboard. It is an http.Handler.
type Server struct {
	cfg  Config
	tpl  map[string]*template.Template
	mux  *http.ServeMux
	csrf string
	// verdicts caches the gate's outcome of finished runs (their results
	// are write-once, so it does not change), by run.
	mu       sync.Mutex
	verdicts map[string]string
	// boards counts each board's stored results for the fleet table.
	boards boardTally
	// opens keeps the fleet's open regressions for the home page.
	opens openCache
	// limit bounds the operator-token checks (Config.LoginLimit).
	limit *loginLimiter
	// secureCookie: Config.PublicURL is https.
	secureCookie bool
	// out tracks the outages of NATS and the store (outage.go).
	out outages
	// rights are what the NATS user may do (actions.go).
	rights rightsCache
	// version is this binary's (internal/version), shown in the header.
	version version.Info
}

// New checks cfg, fills its defaults and parses the embedded templates.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.JS == nil:
		return nil, errors.New("ui: Config.JS is required")
	case cfg.Topology == nil:
		return nil, errors.New("ui: Config.Topology is required")
	case cfg.Store == nil:
		return nil, errors.New("ui: Config.Store is required (a job's verdict is its stored result)")
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.RecentRuns <= 0 {
		cfg.RecentRuns = 20
	}
	fillTimeouts(&cfg)
	if cfg.Actions && cfg.ActionsToken != "" {
		if err := CheckToken(cfg.ActionsToken); err != nil {
			return nil, fmt.Errorf("ui: Config.ActionsToken: %w", err)
		}
	}
	lim, err := loginLimit(cfg.LoginLimit)
	if err != nil {
		return nil, err
	}
	secure, err := publicURL(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.ManifestTTL == 0 {
		cfg.ManifestTTL = defaultManifestTTL
	}
	if cfg.ManifestTTL > 0 {
		topo := *cfg.Topology
		topo.Runs = newKVCache(topo.Runs, cfg.ManifestTTL, nil)
		cfg.Topology = &topo
	}
	switch {
	case cfg.Gate.Repeats == 0:
		cfg.Gate.Repeats = gate.DefaultRepeats
	case cfg.Gate.Repeats < 0:
		cfg.Gate.Repeats = 0
	}
	s := &Server{cfg: cfg, verdicts: map[string]string{}, limit: newLoginLimiter(lim, time.Now), secureCookie: secure, version: version.Get()}
	g, err := gate.NewGate(cfg.Gate, s.history) // validates cfg.Gate, fills its defaults
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s.cfg.Gate = g.Config()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("ui: csrf token: %w", err)
	}
	s.csrf = hex.EncodeToString(b[:])
	if s.tpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(staticFS, "static")
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", s.home)
	m.HandleFunc("GET /fleet", s.toHome)
	m.HandleFunc("GET /runs", s.toHome)
	m.HandleFunc("GET /", s.notFound)
	m.HandleFunc("GET /runs/{run}", s.run)
	m.HandleFunc("GET /runs/{run}/jobs/{job}", s.job)
	m.HandleFunc("GET /series", s.series)
	m.HandleFunc("GET /dlq", s.dlq)
	m.HandleFunc("GET /artifacts/", s.artifact)
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.action(s.logout))
	m.HandleFunc("POST /runs/{run}/cancel", s.action(s.cancel))
	m.HandleFunc("POST /dlq/{id}/retry", s.action(s.retry))
	m.HandleFunc("POST /fleet/{worker}/{device}/release", s.action(s.release))
	s.mux = m
	return s, nil
}

// ServeHTTP serves the dashboard's pages with a content security policy
// that allows nothing from outside the server, to requests whose Host it
// serves (Config.AllowHosts; 421 otherwise). A request with an
// "Authorization: Bearer" header (when actions are on) is answered 401 or
// 429 here unless its token is right and the login limit allows the check.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		refuseHost(w, r.Host)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if tok, ok := bearerToken(r); ok && s.cfg.Actions && s.cfg.ActionsToken != "" {
		if !s.checkToken(w, r, tok, "bearer") {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), bearerKey{}, true))
	}
	// What the page's probe finds (pageHealth), for its banners (render).
	r = r.WithContext(context.WithValue(r.Context(), healthKey{}, &pageState{}))
	s.mux.ServeHTTP(w, r)
}

// Serve serves the dashboard on ln until ctx ends, then shuts down
// gracefully (at most 5 s). Meanwhile it checks NATS and the store every
// 2 s, so an outage's banner says when it began.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.httpServer()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go s.watchOutages(wctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		return nil
	}
}

// history is the gate's baseline reader: the results query, through the
// Parquet index for compacted dates.
func (s *Server) history(ctx context.Context, f index.Filter) ([]*protocol.Result, error) {
	rs, _, err := index.Query(ctx, s.cfg.Store, f)
	return rs, err
}

// page is what every template gets.
type page struct {
	Title   string
	Refresh int  // seconds; 0 = no reload
	Actions bool // the buttons: actions on and an operator logged in
	Login   bool // actions on, no operator logged in: a link to /login
	CSRF    string
	Flash   string
	// Outages are the banners of what the page could not reach.
	Outages []banner
	// Version is this dashboard's (version.Info.String()).
	Version string
	Data    any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title string, live bool, data any) {
	op := s.operator(r)
	p := page{Title: title, Actions: op, Login: s.cfg.Actions && !op, CSRF: s.csrf, Flash: r.URL.Query().Get("flash"), Data: data,
		Outages: s.pageBanners(r), Version: s.version.String()}
	if live && s.cfg.Refresh > 0 {
		p.Refresh = max(1, int(s.cfg.Refresh/time.Second))
	}
	var b strings.Builder
	if err := s.tpl[name].ExecuteTemplate(&b, "layout", p); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// errorData is the error page's.
type errorData struct {
	Heading         string
	Message         string
	Back, BackLabel string
}

// fail answers with an error page: the site's navigation, what went
// wrong, and a link back to the fleet and runs.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	s.failBack(w, r, code, err, "/", "fleet & runs")
}

// failBack is fail with the link back to the page at back (label names it).
func (s *Server) failBack(w http.ResponseWriter, r *http.Request, code int, err error, back, label string) {
	if code >= 500 {
		s.cfg.Log.Error().Err(err).Str("component", "ui").Str("path", r.URL.Path).Msg("request failed")
	}
	d := errorData{Heading: http.StatusText(code), Message: err.Error(), Back: back, BackLabel: label}
	if code == http.StatusNotFound {
		d.Heading = "Not found"
	}
	var b strings.Builder
	op := s.operator(r)
	p := page{Title: d.Heading, Actions: op, Login: s.cfg.Actions && !op, CSRF: s.csrf, Data: d, Outages: s.pageBanners(r), Version: s.version.String()}
	if terr := s.tpl["error"].ExecuteTemplate(&b, "layout", p); terr != nil {
		http.Error(w, err.Error(), code)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// toHome sends /fleet and /runs, which the navigation's "fleet & runs"
// suggests, to the home page's section.
func (s *Server) toHome(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/#"+strings.TrimPrefix(r.URL.Path, "/"), http.StatusFound)
}

// notFound answers a path the dashboard does not serve.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, fmt.Errorf("the dashboard has no page %s", r.URL.Path))
}

// action wraps a POST handler: actions must be enabled, the request must
// come from an operator (authorize) and the form must carry the CSRF
// token (a bearer-token request needs none) (and, when the browser sends one, an Origin of this
// server).
func (s *Server) action(fn func(w http.ResponseWriter, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorize(w, r) {
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		tok := r.PostFormValue("csrf")
		if !s.bearer(r) && subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) != 1 {
			http.Error(w, "missing or wrong CSRF token: reload the page", http.StatusForbidden)
			return
		}
		msg, err := fn(w, r)
		if err != nil {
			msg = "failed: " + err.Error()
		}
		back := safeBack(r.PostFormValue("back"))
		http.Redirect(w, r, back+"?flash="+url.QueryEscape(msg), http.StatusSeeOther)
	}
}
