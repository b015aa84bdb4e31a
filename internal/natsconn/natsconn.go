// Package natsconn connects benchfleet commands to NATS with every supported
// kind of authentication (user/password, token, nkey seed, creds file) and
// TLS, reconnecting forever with logged state changes.
package natsconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/redact"
)

// Options say where and how to connect. Every field is optional but URL.
type Options struct {
	// URL is one or more comma-separated server URLs. User info in a URL
	// (nats://user:pass@host) is still used for user/password auth, with a
	// warning: the docs forbid it (User and Password instead).
	URL string
	// Name is the connection name shown by the server (default "benchfleet").
	Name string
	// Creds is a JWT creds file (NATS_CREDS).
	Creds string
	// NKeySeed is a file holding an nkey seed.
	NKeySeed string
	// User and Password for user/password auth (NATS_USER, NATS_PASSWORD).
	User, Password string
	// Token for token auth (NATS_TOKEN).
	Token string
	// TLSCA is a CA bundle to verify the servers; TLSCert and TLSKey a client
	// certificate. Setting any of them requires TLS.
	TLSCA, TLSCert, TLSKey string
	// InboxPrefix replaces "_INBOX" as the prefix of this connection's reply
	// subjects (JetStream API replies, publish acks, pulled messages), so a
	// server can let each user subscribe to its own inboxes only (deploy/nats
	// uses _INBOX_<user>). Empty: "_INBOX_<User>" when User is set (the
	// convention of deploy/nats), else "_INBOX". Connect fails with
	// ErrInboxDenied when the server refuses this user the prefix.
	InboxPrefix string
	// ConnectTimeout bounds the first connection (default 10s) while
	// servers do not answer in time; a refusal (nothing listens), refused
	// credentials and TLS failures end it at once.
	ConnectTimeout time.Duration
	// PingInterval is how often the client pings its server (default
	// DefaultPingInterval). With MaxPingsOut unanswered pings allowed, a
	// connection that stopped answering (a half-open TCP connection, a
	// frozen server) is dropped and reconnected within StaleAfter.
	PingInterval time.Duration
}

// DefaultPingInterval is how often a connection pings its server, and
// MaxPingsOut how many pings may go unanswered: the next ping after them
// finds the connection stale, so a half-open connection is found within
// StaleAfter(DefaultPingInterval) = 30 s. That is well within the job
// consumers' default ack wait (60 s): a worker whose connection went
// half-open reconnects and sends its next InProgress (every ack wait / 3)
// before its claims lapse (30 s + 20 s < 60 s). nats.go's own default is
// 2 minutes, which let a claim lapse and its job run twice.
const (
	DefaultPingInterval = 10 * time.Second
	MaxPingsOut         = 2
)

// StaleAfter is the longest a connection that pings every interval keeps
// a server that stopped answering: MaxPingsOut pings unanswered, and the
// one after finds it stale.
func StaleAfter(interval time.Duration) time.Duration {
	return time.Duration(MaxPingsOut+1) * interval
}

// Connect dials NATS, trying every URL. It retries the first connection
// until ConnectTimeout or ctx ends while servers time out, but returns at
// once when every server refused the connection, or with an error that
// wraps ErrAuth, ErrTLS or ErrInboxDenied and says which flag or variable
// to fix; once connected, it reconnects forever.
func Connect(ctx context.Context, o Options, log zerolog.Logger) (*nats.Conn, error) {
	if o.URL == "" {
		return nil, fmt.Errorf("nats: no server URL (set --nats or NATS_URL)")
	}
	name := o.Name
	if name == "" {
		name = "benchfleet"
	}
	log = log.With().Str("component", "nats").Logger()
	inbox := inboxPrefix(o)
	if hasUserinfo(o.URL) {
		log.Warn().Str("url", Redact(o.URL)).Msg(urlWarning)
	}
	ping := o.PingInterval
	if ping <= 0 {
		ping = DefaultPingInterval
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(MaxPingsOut),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("disconnected")
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info().Str("server", Redact(c.ConnectedUrl())).Msg("reconnected")
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			logAsync(log, inbox, o, err)
		}),
	}
	if inbox != defaultInbox {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKeySeed != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed %s: %w", o.NKeySeed, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, fmt.Errorf("nats: a client certificate needs both --tls-cert and --tls-key")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	opts = append(opts, nats.Timeout(min(timeout, 5*time.Second)))
	deadline := time.Now().Add(timeout)
	for {
		nc, err := nats.Connect(o.URL, opts...)
		if err == nil {
			// A denied inbox fails every request only at its deadline:
			// found now, it is an error that names the prefix to give.
			if err := checkInbox(nc, inbox, o, min(timeout, 5*time.Second)); err != nil {
				nc.Close()
				return nil, fmt.Errorf("nats: connect %s: inbox prefix %s: %w", Redact(o.URL), inbox, err)
			}
			log.Debug().Str("server", Redact(nc.ConnectedUrl())).Str("inbox", inbox).Msg("connected")
			return nc, nil
		}
		// nats.go may echo the URL (a parse error quotes it whole), so the
		// error is scrubbed of every credential it could hold.
		err = redact.Error(err, append(redact.Secrets(o.URL), o.Password, o.Token)...)
		// Auth and TLS failures will not heal by retrying, nor will a URL
		// that does not parse; a refusal from every server (nats.go's "no
		// servers") says nothing listens there now.
		if kind, hint := classify(err, o); kind != nil {
			return nil, fmt.Errorf("nats: connect %s: %w (%w); %s", Redact(o.URL), kind, err, hint)
		}
		if errors.Is(err, nats.ErrNoServers) {
			return nil, fmt.Errorf("nats: connect %s: %w; %s", Redact(o.URL), err, refusedHint(o.URL))
		}
		if errors.As(err, new(*url.Error)) || time.Now().After(deadline) {
			return nil, fmt.Errorf("nats: connect %s: %w", Redact(o.URL), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("nats: connect %s: %w", Redact(o.URL), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Redact hides passwords and tokens in (comma-separated) server URLs,
// whatever characters they hold.
func Redact(urls string) string { return redact.Userinfo(urls) }

// Client is a connection and its JetStream API, what the command line
// hands to the libraries.
type Client struct {
	*nats.Conn
	JS jetstream.JetStream
}

// ConnectJetStream is Connect and the connection's JetStream API.
func ConnectJetStream(ctx context.Context, o Options, log zerolog.Logger) (*Client, error) {
	nc, err := Connect(ctx, o, log)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Client{Conn: nc, JS: js}, nil
}
