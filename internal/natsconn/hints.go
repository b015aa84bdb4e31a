package natsconn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// Errors of a first connection that retrying cannot fix. Connect's error
// wraps one of them (and the nats.go error below it) and ends with what to
// change, naming the benchfleet flag or environment variable.
var (
	// ErrAuth: the server refused the credentials (missing, wrong, for an
	// unknown user, expired or revoked).
	ErrAuth = errors.New("authentication failed")
	// ErrTLS: the TLS handshake failed (a server certificate from a CA
	// this client does not trust or for another name) or TLS was wanted
	// on one side only.
	ErrTLS = errors.New("TLS failed")
)

// classify returns the sentinel of err and what to do about it, or nil
// when err may heal by retrying (a server not answering in time).
func classify(err error, o Options) (error, string) {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrAuthRevoked), errors.Is(err, nats.ErrAccountAuthExpired):
		return ErrAuth, authHint(o)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return ErrTLS, "--tls-ca/--tls-cert (NATS_TLS_CA, NATS_TLS_CERT) ask for TLS, but the server runs without TLS: unset them for this server, or use its TLS listener"
	case errors.Is(err, nats.ErrSecureConnRequired):
		return ErrTLS, "the server requires TLS: use a tls:// URL and give its CA with --tls-ca (NATS_TLS_CA)"
	}
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		if o.TLSCA == "" {
			return ErrTLS, "the server's certificate is signed by a CA this host does not trust: give that CA's certificate with --tls-ca FILE (NATS_TLS_CA), e.g. ca.pem of deploy/nats/make-certs.sh"
		}
		return ErrTLS, fmt.Sprintf("the server's certificate is not signed by the CA in %s (--tls-ca, NATS_TLS_CA): give the CA that signed the server's certificate", o.TLSCA)
	case errors.As(err, &host) && host.Certificate != nil:
		return ErrTLS, fmt.Sprintf("the server's certificate is not for the host in the URL: connect by a name it holds (%s), or issue it for this name",
			strings.Join(append(host.Certificate.DNSNames, ipStrings(host.Certificate)...), ", "))
	case errors.As(err, &invalid):
		return ErrTLS, "the server's certificate is not valid (expired, or not for server use): renew it"
	case errors.Is(err, nats.ErrTLS):
		return ErrTLS, "check --tls-ca, --tls-cert and --tls-key (NATS_TLS_CA, NATS_TLS_CERT, NATS_TLS_KEY)"
	}
	return nil, ""
}

// authHint says which credentials were tried and where each comes from,
// in the command line's names. It never holds a secret.
func authHint(o Options) string {
	switch {
	case o.Creds != "":
		return fmt.Sprintf("the server refused the creds file %s (--creds, NATS_CREDS): is it a user of this server's operator and account?", o.Creds)
	case o.NKeySeed != "":
		return fmt.Sprintf("the server refused the nkey in %s (--nkey, NATS_NKEY): is its public key a user in the server's config?", o.NKeySeed)
	case o.User != "" && o.Password == "":
		return fmt.Sprintf("user %q has no password: put it in NATS_PASSWORD, or in a 0600 file named by NATS_PASSWORD_FILE (never on the command line)", o.User)
	case o.User != "":
		return fmt.Sprintf("the server refused user %q (--user, NATS_USER) with the password from NATS_PASSWORD or NATS_PASSWORD_FILE: check both", o.User)
	case o.Token != "":
		return "the server refused the token (NATS_TOKEN, --token)"
	case hasUserinfo(o.URL):
		return "the server refused the user info in the NATS URL: give --user (NATS_USER) with the password in NATS_PASSWORD or NATS_PASSWORD_FILE instead"
	case o.Password != "":
		return "a password is set (NATS_PASSWORD or NATS_PASSWORD_FILE) but no user: give --user (NATS_USER)"
	}
	return "no credentials were given and the server requires them: --user (NATS_USER) with NATS_PASSWORD or NATS_PASSWORD_FILE, --creds (NATS_CREDS), --nkey (NATS_NKEY) or NATS_TOKEN"
}

// refusedHint is the advice when every server refused the connection.
func refusedHint(urls string) string {
	return fmt.Sprintf("no server accepted a connection at %s (connection refused): is nats-server running and listening there? (`benchfleet dev` serves nats://127.0.0.1:4222)", Redact(urls))
}

// hasUserinfo reports whether any of the comma-separated URLs carries user
// info (user:password@ or a token@), which the command line of every
// process is visible with.
func hasUserinfo(urls string) bool { return Redact(urls) != urls }

// urlWarning is the warning for credentials in the URL.
const urlWarning = "a password in the NATS URL: the docs forbid it (every user of the host sees a command line in ps, and logs keep URLs); " +
	"give --user (NATS_USER) with the password in NATS_PASSWORD or in a 0600 file named by NATS_PASSWORD_FILE, or a token in NATS_TOKEN"

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}
