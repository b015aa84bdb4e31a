package ui

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
)

// ListenError is Listen's error when addr cannot be bound.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return fmt.Sprintf("listen %s: %v", e.Addr, e.Err) }
func (e *ListenError) Unwrap() error { return e.Err }

// Listen binds addr and makes the dashboard of cfg for it: the address it
// bound, when it is neither loopback nor unspecified, is a host the
// dashboard answers besides cfg.AllowHosts (a request naming it would
// otherwise be refused as a rebinding attempt).
func Listen(addr string, cfg Config) (*Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, &ListenError{Addr: addr, Err: err}
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsUnspecified() && !ta.IP.IsLoopback() {
		cfg.AllowHosts = append(cfg.AllowHosts[:len(cfg.AllowHosts):len(cfg.AllowHosts)], ta.IP.String())
	}
	srv, err := New(cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return srv, ln, nil
}

// Banner says where the dashboard on ln serves, whether actions are on
// and which hosts it answers.
func (s *Server) Banner(ln net.Listener) string {
	mode := "read-only"
	if s.cfg.Actions {
		mode = "actions on"
	}
	hosts := "loopback names"
	if len(s.cfg.AllowHosts) > 0 {
		hosts += ", " + strings.Join(s.cfg.AllowHosts, ", ")
	}
	return fmt.Sprintf("dashboard on http://%s/ (%s; answers %s)", ln.Addr(), mode, hosts)
}

// TokenEnv holds the operator token when no token file is given.
const TokenEnv = "BENCHFLEET_ACTIONS_TOKEN"

// OperatorToken reads the operator token (ReadToken) and, when actions
// are on, requires one of at least MinTokenLen bytes; errors name where it
// came from (--actions-token-file FILE or $BENCHFLEET_ACTIONS_TOKEN).
func OperatorToken(file string, actions bool) (string, error) {
	src := "$" + TokenEnv
	if file != "" {
		src = "--actions-token-file " + file
	}
	token, err := ReadToken(file)
	switch {
	case err != nil:
		return "", fmt.Errorf("--actions-token-file: %w", err)
	case actions && token == "":
		return "", fmt.Errorf("--actions needs an operator token: --actions-token-file FILE or $%s (make one with `openssl rand -hex 32`)", TokenEnv)
	case actions:
		if err := CheckToken(token); err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
	}
	return token, nil
}

// ReadToken is the operator token: the first line of file, else $TokenEnv
// ("" when file is "" and the variable is not set). An unreadable or
// empty file is an error naming it.
func ReadToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(TokenEnv)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	tok, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", fmt.Errorf("%s is empty", file)
	}
	return tok, nil
}

// NewToken makes a random operator token (256 bits, hex: as `openssl
// rand -hex 32`).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
