package natsconn

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Passwords never reach an error or a log line, also when they hold
// characters that break URL parsing ('%', '#') or are escaped.
func TestConnectErrorsNeverShowPasswords(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, c := range []struct{ url, secret string }{
		{"nats://u:pa%zzw0rd@" + addr, "pa%zzw0rd"},
		{"nats://u:pa#ssw0rd@" + addr, "pa#ssw0rd"},
		{"nats://u:pa%23ssw0rd@" + addr, "ssw0rd"},
		{"nats://u:pa/ss?w0rd@" + addr, "ss?w0rd"},
		{"nats://127.0.0.1:1,nats://u:se,cret@" + addr, "cret"},
		{"tls://tok%en@" + addr, "tok%en"},
	} {
		_, err := Connect(t.Context(), Options{URL: c.url, ConnectTimeout: 300 * time.Millisecond}, zerolog.Nop())
		if err == nil {
			t.Fatalf("%s: connected", c.url)
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("the error shows the password %q: %v", c.secret, err)
		}
		if r := Redact(c.url); strings.Contains(r, c.secret) {
			t.Errorf("Redact(%q) = %q", c.url, r)
		}
	}
}
