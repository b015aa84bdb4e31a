package natsconn

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/protocol"
)

// ErrInboxDenied: the server does not let this user subscribe to the
// connection's reply subjects (its inbox prefix), so no JetStream call,
// publish ack or pulled job could ever reach it. Connect's error wraps it
// (and nats.ErrPermissionViolation) and names the prefix to give.
var ErrInboxDenied = errors.New("inbox denied")

// defaultInbox is nats.go's inbox prefix.
const defaultInbox = "_INBOX"

// inboxPrefix is the prefix the connection uses: the one given, else
// _INBOX_<user> for a named user (each deploy/nats user may subscribe to
// _INBOX_<user>.> only) whose name is one subject token, else _INBOX.
func inboxPrefix(o Options) string {
	switch {
	case o.InboxPrefix != "":
		return o.InboxPrefix
	case o.User != "" && !strings.ContainsAny(o.User, " \t\r\n.*>"):
		return defaultInbox + "_" + o.User
	}
	return defaultInbox
}

// checkInbox subscribes to a subject under prefix and waits for the
// server's answer to a PING sent after it: the server answers the SUB
// (with a permissions violation, or nothing) before the PONG, so a denied
// inbox is known here, before any request waits on it until a deadline.
// A server that does not answer in timeout is not judged.
func checkInbox(nc *nats.Conn, prefix string, o Options, timeout time.Duration) error {
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		return nil // a closed connection: the caller's next call says so
	}
	defer func() { _ = sub.Unsubscribe() }()
	if nc.FlushTimeout(timeout) != nil {
		return nil
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && violationOn(err, prefix) {
		return fmt.Errorf("%w (%w); %s", ErrInboxDenied, err, inboxHint(prefix, o))
	}
	return nil
}

// violationOn reports whether err is a permissions violation for a
// subscription under prefix (nats.go: `Permissions Violation for
// Subscription to "<subject>"`).
func violationOn(err error, prefix string) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	s := err.Error()
	i := strings.Index(strings.ToLower(s), `subscription to "`)
	if i < 0 {
		return false
	}
	subject, _, _ := strings.Cut(s[i+len(`subscription to "`):], `"`)
	return subject == prefix || strings.HasPrefix(subject, prefix+".")
}

// inboxHint says which prefix to give and how, in the command line's
// names.
func inboxHint(prefix string, o Options) string {
	if o.User != "" && prefix != defaultInbox+"_"+o.User {
		return fmt.Sprintf("user %q may not subscribe to %s.>: give --inbox-prefix %s_%s (NATS_INBOX_PREFIX), the inbox deploy/nats gives each user (_INBOX_<user>), "+
			"or the prefix this server allows the user", o.User, prefix, defaultInbox, o.User)
	}
	return fmt.Sprintf("this user may not subscribe to %s.>: give --inbox-prefix (NATS_INBOX_PREFIX) with the prefix the server allows it (deploy/nats: --inbox-prefix _INBOX_<user>)", prefix)
}

// logAsync logs an asynchronous error of the connection; a violation on
// the connection's own inbox is an error that names the fix.
func logAsync(log zerolog.Logger, prefix string, o Options, err error) {
	if violationOn(err, prefix) {
		log.Error().Err(err).Str("inbox", prefix).Msg("replies to this client are refused: " + inboxHint(prefix, o))
		return
	}
	log.Warn().Err(err).Msg("async error")
}

// Untrusted reports whether a client of this user and inbox prefix is the
// untrusted producer of deploy/nats: NATS user `untrusted` (--user,
// NATS_USER), or its inbox _INBOX_untrusted (--inbox-prefix, which a
// creds or nkey user gives).
func Untrusted(user, inboxPrefix string) bool {
	return user == protocol.OwnerUntrusted || inboxPrefix == "_INBOX_"+protocol.OwnerUntrusted
}
