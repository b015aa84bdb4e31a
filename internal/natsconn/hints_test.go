package natsconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/embedded"
)

// testCA is a throwaway CA and a server certificate for 127.0.0.1 and
// localhost that it signed, as PEM files.
type testCA struct{ ca, cert, key string }

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := testCA{ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server-key.pem")}
	for path, b := range map[string]*pem.Block{c.ca: {Type: "CERTIFICATE", Bytes: caDER}, c.cert: {Type: "CERTIFICATE", Bytes: der}, c.key: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// startServer runs an embedded nats-server from config text on
// 127.0.0.1 and returns its client URL.
func startServer(t *testing.T, conf string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Options{Dir: filepath.Join(t.TempDir(), "js"), ConfigFile: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

// connectOnce dials with a first-connection budget far longer than the
// test's own deadline: an error that is not retried comes back as itself,
// one that is retried until the deadline comes back as the ctx's error.
func connectOnce(t *testing.T, o Options, log zerolog.Logger) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	o.ConnectTimeout = time.Hour
	nc, err := Connect(ctx, o, log)
	if err == nil {
		nc.Close()
		t.Fatalf("%s as %q: connected", o.URL, o.User)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s as %q: retried until the test's deadline instead of failing at once: %v", o.URL, o.User, err)
	}
	return err
}

func wantAll(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: the error does not say %q:\n%v", what, p, err)
		}
	}
}

// A refused login says which user was tried and where its password comes
// from (NATS_PASSWORD, NATS_PASSWORD_FILE: the variables the command line
// reads), or which credentials to give when none were.
func TestConnectAuthErrorsSayWhatIsMissing(t *testing.T) {
	t.Parallel()
	url := startServer(t, `authorization { users: [ { user: producer, password: "pw-producer" } ] }`+"\n")
	for _, c := range []struct {
		name  string
		o     Options
		parts []string
	}{
		{"no password", Options{User: "producer"}, []string{`user "producer"`, "no password", "NATS_PASSWORD", "NATS_PASSWORD_FILE"}},
		{"wrong password", Options{User: "producer", Password: "nope"}, []string{`user "producer"`, "NATS_PASSWORD", "NATS_PASSWORD_FILE"}},
		{"unknown user", Options{User: "producr", Password: "pw-producer"}, []string{`user "producr"`, "--user", "NATS_USER"}},
		{"nothing", Options{}, []string{"no credentials", "--user", "NATS_PASSWORD", "--creds", "NATS_CREDS", "--nkey", "NATS_TOKEN"}},
		{"password without user", Options{Password: "pw-producer"}, []string{"no user", "--user", "NATS_USER"}},
		{"token", Options{Token: "tok-nope"}, []string{"token", "NATS_TOKEN"}},
	} {
		c.o.URL = url
		err := connectOnce(t, c.o, zerolog.Nop())
		if !errors.Is(err, ErrAuth) || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("%s: %v, want ErrAuth saying authorization violation", c.name, err)
		}
		wantAll(t, c.name, err, c.parts...)
		if strings.Contains(err.Error(), "nope") || strings.Contains(err.Error(), "pw-producer") {
			t.Errorf("%s: the error shows a secret: %v", c.name, err)
		}
	}
}

// A server certificate from a CA the client does not trust fails at once
// (no retries until the connect timeout) and names --tls-ca and
// NATS_TLS_CA; with the wrong CA given it names that file. TLS on one
// side only is named too.
func TestConnectTLSErrorsNameTheCAFlag(t *testing.T) {
	t.Parallel()
	good, other := newTestCA(t, "benchfleet test CA"), newTestCA(t, "another CA")
	url := startServer(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q }\n", good.cert, good.key))

	err := connectOnce(t, Options{URL: url}, zerolog.Nop())
	if !errors.Is(err, ErrTLS) {
		t.Errorf("no CA: %v, want ErrTLS", err)
	}
	wantAll(t, "no CA", err, "x509", "--tls-ca", "NATS_TLS_CA")

	err = connectOnce(t, Options{URL: url, TLSCA: other.ca}, zerolog.Nop())
	if !errors.Is(err, ErrTLS) {
		t.Errorf("wrong CA: %v, want ErrTLS", err)
	}
	wantAll(t, "wrong CA", err, "x509", other.ca, "--tls-ca", "NATS_TLS_CA")

	// The right CA connects.
	nc, err := Connect(t.Context(), Options{URL: url, TLSCA: good.ca, ConnectTimeout: 5 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatalf("the right CA: %v", err)
	}
	nc.Close()

	// A CA given for a server without TLS.
	plain := startServer(t, "")
	err = connectOnce(t, Options{URL: plain, TLSCA: good.ca}, zerolog.Nop())
	if !errors.Is(err, ErrTLS) {
		t.Errorf("CA for a plain server: %v, want ErrTLS", err)
	}
	wantAll(t, "CA for a plain server", err, "--tls-ca", "NATS_TLS_CA", "without TLS")
}

// A server that refuses the connection (nothing listens) is reported at
// once, not retried until the connect timeout; a URL list with one live
// server still connects to it (the first connection walks every URL).
func TestConnectRefusedFailsAtOnce(t *testing.T) {
	t.Parallel()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "nats://" + l.Addr().String()
	}
	one, two := closed(), closed()
	for _, url := range []string{one, one + "," + two} {
		err := connectOnce(t, Options{URL: url}, zerolog.Nop())
		if errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS) {
			t.Errorf("%s: %v is not a refusal", url, err)
		}
		wantAll(t, url, err, "connection refused", one)
	}
	live := startServer(t, "")
	for range 5 {
		nc, err := Connect(t.Context(), Options{URL: one + "," + live + "," + two, ConnectTimeout: 5 * time.Second}, zerolog.Nop())
		if err != nil {
			t.Fatalf("a URL list with one live server: %v", err)
		}
		if got := nc.ConnectedUrl(); got != live {
			t.Errorf("connected to %s, want %s", got, live)
		}
		nc.Close()
	}
}

// syncLog collects log lines from the client's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A password in the URL still works, with a warning that says the docs
// forbid it and what to use instead; the warning never shows it.
func TestPasswordInURLWarns(t *testing.T) {
	t.Parallel()
	url := startServer(t, `authorization { users: [ { user: producer, password: "pw-in-url" } ] }`+"\n")
	log := &syncLog{}
	withPW := strings.Replace(url, "://", "://producer:pw-in-url@", 1)
	nc, err := Connect(t.Context(), Options{URL: withPW, ConnectTimeout: 5 * time.Second}, zerolog.New(log))
	if err != nil {
		t.Fatalf("password in the URL: %v", err)
	}
	nc.Close()
	out := log.String()
	for _, p := range []string{`"level":"warn"`, "password in the NATS URL", "--user", "NATS_PASSWORD", "NATS_PASSWORD_FILE"} {
		if !strings.Contains(out, p) {
			t.Errorf("the log does not say %q:\n%s", p, out)
		}
	}
	if strings.Contains(out, "pw-in-url") {
		t.Errorf("the log shows the password:\n%s", out)
	}
	// Without user info in the URL: no warning.
	log2 := &syncLog{}
	nc, err = Connect(t.Context(), Options{URL: url, User: "producer", Password: "pw-in-url", ConnectTimeout: 5 * time.Second}, zerolog.New(log2))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if strings.Contains(log2.String(), "URL") {
		t.Errorf("a warning without user info in the URL:\n%s", log2.String())
	}
}
