// Package cli is the benchfleet command line: one file per subcommand, all
// output written to injected writers so tests can read it.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/benchfleet/benchfleet/internal/natsconn"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/internal/version"
	"github.com/benchfleet/benchfleet/producer/watch"
	"github.com/benchfleet/benchfleet/storage"
)

// Exit codes (the README's table).
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitGate    = 2
	ExitTimeout = 3
	ExitUsage   = 64
	// ExitUnavailable: NATS or JetStream could not be reached (no server
	// answered, or the cluster had no leader until the deadline: an
	// election that did not end, a lost quorum), or a wait's timeout
	// passed while the store or NATS did not answer, as sysexits'
	// EX_UNAVAILABLE. No job failed; try again.
	ExitUnavailable = 69
	ExitInternal    = 70
	// ExitInterrupted: Ctrl-C (SIGINT) or SIGTERM while waiting.
	ExitInterrupted = 130
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad flag or input: exit 64 with a message naming it.
func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode ends the command with code and no further message (the command
// printed its own summary).
func exitCode(code int) error { return &exitError{code: code} }

// app holds the global flags and the injected streams.
type app struct {
	stdout, stderr io.Writer
	natsURL        string
	creds          string
	nkey           string
	user, password string
	token          string
	tlsCA          string
	tlsCert        string
	tlsKey         string
	inboxPrefix    string
	storeURL       string
	logLevel       string
	logFormat      string
	ackWait        time.Duration
	maxDeliver     int
	heartbeat      time.Duration
	replicas       int
	// resultGrace: how long a waiter waits for a reported job's result
	// before it warns (the hidden --result-grace; tests shorten it).
	resultGrace time.Duration
	// servicePoll: how often a waiter reads the fleet to say when a pool
	// of its run has no board in service (the hidden --service-poll).
	servicePoll time.Duration
	log         zerolog.Logger
	// envErrs are environment variables that did not parse; reported by
	// setup as usage errors.
	envErrs []string
}

// Run runs the command line with args (without the program name) and
// returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return exitStatus(root.ExecuteContext(ctx), stderr)
}

// exitStatus prints a command's error (if any) to stderr and returns its
// exit code: the code an exitError carries, 64 for cobra's usage errors,
// 69 when NATS, JetStream or (waiting) the store could not be reached, else 1.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "benchfleet: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "benchfleet: %v\n", err)
	switch {
	case isUsage(err):
		return ExitUsage
	case errors.Is(err, topology.ErrUnavailable), errors.Is(err, watch.ErrUnreachable):
		return ExitUnavailable
	}
	return ExitFailed
}

// isUsage recognizes cobra's own argument and flag errors.
func isUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCmd() *cobra.Command {
	info := version.Get() // what `version` and --version print
	root := &cobra.Command{
		Use:           "benchfleet",
		Short:         "Run accelerator benchmarks across a farm of device hosts",
		Long:          longHelp("benchfleet"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       info.String(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// The demo shows its own progress; worker logs only when asked.
			if cmd.Name() == "demo" && !cmd.Flags().Changed("log-level") && os.Getenv("BENCHFLEET_LOG_LEVEL") == "" {
				a.logLevel = "warn"
			}
			return a.setup()
		},
	}
	root.SetVersionTemplate(info.Long())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr("%v%s", err, flagHint(c, err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.natsURL, "nats", os.Getenv("NATS_URL"), "NATS server URL(s), comma-separated (env NATS_URL)")
	pf.StringVar(&a.creds, "creds", os.Getenv("NATS_CREDS"), "NATS creds file (env NATS_CREDS)")
	pf.StringVar(&a.nkey, "nkey", os.Getenv("NATS_NKEY"), "NATS nkey seed file (env NATS_NKEY)")
	pf.StringVar(&a.user, "user", os.Getenv("NATS_USER"), "NATS user (env NATS_USER; password from NATS_PASSWORD or the file NATS_PASSWORD_FILE, never a flag)")
	a.password = os.Getenv("NATS_PASSWORD")
	if f := os.Getenv("NATS_PASSWORD_FILE"); a.password == "" && f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			a.envErrs = append(a.envErrs, fmt.Sprintf("NATS_PASSWORD_FILE: %v", err))
		}
		a.password = strings.TrimRight(string(data), "\r\n")
	}
	pf.StringVar(&a.token, "token", "", "NATS auth token (default env NATS_TOKEN; prefer the env var, a flag shows in ps)")
	pf.StringVar(&a.tlsCA, "tls-ca", os.Getenv("NATS_TLS_CA"), "CA bundle to verify NATS servers (env NATS_TLS_CA)")
	pf.StringVar(&a.tlsCert, "tls-cert", os.Getenv("NATS_TLS_CERT"), "client certificate for NATS (env NATS_TLS_CERT)")
	pf.StringVar(&a.tlsKey, "tls-key", os.Getenv("NATS_TLS_KEY"), "client key for NATS (env NATS_TLS_KEY)")
	pf.StringVar(&a.inboxPrefix, "inbox-prefix", os.Getenv("NATS_INBOX_PREFIX"), "prefix of this client's NATS reply subjects; default _INBOX_<user> with --user (the inbox of deploy/nats users), else _INBOX (env NATS_INBOX_PREFIX)")
	pf.StringVar(&a.storeURL, "store", os.Getenv("BENCHFLEET_STORE"), "result store: file:///dir or s3://bucket/prefix?endpoint=...&region=... (env BENCHFLEET_STORE)")
	pf.StringVar(&a.logLevel, "log-level", cmp.Or(os.Getenv("BENCHFLEET_LOG_LEVEL"), "info"), "log level: debug, info, warn, error (env BENCHFLEET_LOG_LEVEL)")
	pf.StringVar(&a.logFormat, "log-format", cmp.Or(os.Getenv("BENCHFLEET_LOG_FORMAT"), "auto"), "log format: auto (console on a TTY, else JSON), console, json")
	a.hiddenFlags(pf)
	root.AddCommand(
		a.demoCmd(), a.devCmd(), a.workerCmd(), a.submitCmd(), a.runsCmd(), a.resultsCmd(),
		a.fleetCmd(), a.dlqCmd(), a.devicesCmd(), a.benchCmd(), a.topologyCmd(), a.serveCmd(), a.spoolCmd(),
		&cobra.Command{Use: "version", Short: "Print the module version and the commit this binary was built from", Args: cobra.NoArgs,
			Run: func(*cobra.Command, []string) { fmt.Fprint(a.stdout, info.Long()) }},
	)
	for _, c := range root.Commands() { // a group (runs, dlq, ...) given an unknown subcommand: a usage error, not its help
		if c.HasSubCommands() && c.RunE == nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return nil
				}
				return usageErr("unknown command %q for %q (see %s --help)", strings.Join(args, " "), cmd.CommandPath(), cmd.CommandPath())
			}
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	return root
}

func (a *app) setup() error {
	if len(a.envErrs) > 0 {
		return usageErr("%s", strings.Join(slices.Compact(slices.Sorted(slices.Values(a.envErrs))), "; ")) // each once: several commands read one variable
	}
	lvl, err := zerolog.ParseLevel(strings.ToLower(a.logLevel))
	if err != nil || a.logLevel == "" {
		return usageErr("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	var w io.Writer = a.stderr
	switch a.logFormat {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: a.stderr, TimeFormat: "15:04:05"}
	case "auto":
		if f, ok := a.stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			w = zerolog.ConsoleWriter{Out: a.stderr, TimeFormat: "15:04:05"}
		}
	default:
		return usageErr("--log-format %q: want auto, console or json", a.logFormat)
	}
	a.log = zerolog.New(w).Level(lvl).With().Timestamp().Logger()
	return nil
}

// connect dials NATS with the global auth flags.
func (a *app) connect(ctx context.Context, name string) (*natsconn.Client, error) {
	if a.natsURL == "" {
		return nil, usageErr("no NATS server: give --nats URL or set NATS_URL (or run `benchfleet dev` and use its URL)")
	}
	c, err := natsconn.ConnectJetStream(ctx, natsconn.Options{
		URL: a.natsURL, Name: name, Creds: a.creds, NKeySeed: a.nkey, User: a.user, Password: a.password,
		Token: cmp.Or(a.token, os.Getenv("NATS_TOKEN")), TLSCA: a.tlsCA, TLSCert: a.tlsCert, TLSKey: a.tlsKey, InboxPrefix: a.inboxPrefix,
	}, a.log)
	if err != nil {
		// Refused credentials, a failed TLS handshake and a denied inbox
		// reached a server, and a URL that does not parse is the caller's;
		// anything else (refused, timed out, no server) did not reach NATS.
		if ctx.Err() == nil && !errors.As(err, new(*url.Error)) && !errors.Is(err, natsconn.ErrAuth) && !errors.Is(err, natsconn.ErrTLS) &&
			!errors.Is(err, natsconn.ErrInboxDenied) {
			return nil, &exitError{code: ExitUnavailable, err: fmt.Errorf("could not reach NATS: %w", err)}
		}
		return nil, err
	}
	return c, nil
}

// dial is connect for a worker process (process.Options.Connect).
func (a *app) dial(name string) func(context.Context) (*nats.Conn, error) {
	return func(ctx context.Context) (*nats.Conn, error) {
		c, err := a.connect(ctx, name)
		if err != nil {
			return nil, err
		}
		return c.Conn, nil
	}
}

// session is what a command works with: a NATS connection and its
// JetStream API, the topology (opened, never changed) and the store, as
// the command asked for them (need). close releases them.
type session struct {
	*natsconn.Client // Conn and JS
	topo             *topology.Handles
	store            storage.Bucket
}

// What a session opens besides the connection.
type need int

const (
	withTopology  need = 1 << iota // the existing topology: a reader credential may not create it
	withStore                      // --store, required (a file store is created: openStore)
	withStoreRead                  // --store, required and existing (openStoreRead)
	withStoreIf                    // --store when given, existing
)

// session connects as name and opens what n asks for; on an error nothing
// is left open.
func (a *app) session(ctx context.Context, name string, n need) (_ *session, err error) {
	s := &session{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.Client, err = a.connect(ctx, name); err != nil {
		return nil, err
	}
	if n&withTopology != 0 {
		if s.topo, err = topology.Open(ctx, s.JS); err != nil {
			return nil, err
		}
	}
	switch {
	case n&withStore != 0:
		s.store, err = a.openStore(ctx)
	case n&withStoreRead != 0 || (n&withStoreIf != 0 && a.storeURL != ""):
		s.store, err = a.openStoreRead(ctx)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *session) close() {
	if s.store != nil {
		s.store.Close()
	}
	if s.Client != nil {
		s.Close()
	}
}

// signalContext ends on SIGINT or SIGTERM, for commands that clean up.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func (a *app) isTTY() bool {
	f, ok := a.stdout.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func (a *app) envDuration(k string, def time.Duration) time.Duration {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.envErrs = append(a.envErrs, fmt.Sprintf("%s=%q: not a duration like 30s", k, v))
		return def
	}
	return d
}

func (a *app) envInt(k string, def int) int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		a.envErrs = append(a.envErrs, fmt.Sprintf("%s=%q: not an integer", k, v))
		return def
	}
	return n
}
