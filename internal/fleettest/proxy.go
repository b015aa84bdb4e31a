package fleettest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards loopback TCP connections to a target (a store, a NATS
// server) until it is frozen: then it forwards nothing on any connection,
// old or new (it still accepts them), as a hung server or a half-open
// connection does, until Thaw.
type Proxy struct {
	l      net.Listener
	target string
	frozen chan struct{} // closed when it freezes

	mu      sync.Mutex
	limit   int64         // FreezeAfter's bytes (0: not armed)
	held    bool          // frozen and not thawed
	resumed chan struct{} // closed at thaw
	conns   []net.Conn
}

// StartProxy listens on a free loopback port and forwards to target
// (host:port); it is closed at cleanup.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target, frozen: make(chan struct{}), resumed: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.Thaw()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Freeze stops forwarding now.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freezeLocked()
}

// FreezeAfter freezes the proxy once one connection has sent n bytes to
// its client (a server frozen mid-download).
func (p *Proxy) FreezeAfter(n int64) {
	p.mu.Lock()
	p.limit = n
	p.mu.Unlock()
}

// Frozen is closed once the proxy froze (the first time).
func (p *Proxy) Frozen() <-chan struct{} { return p.frozen }

// Thaw forwards again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = 0
	if p.held {
		p.held = false
		close(p.resumed)
		p.resumed = make(chan struct{})
	}
}

func (p *Proxy) freezeLocked() {
	if p.held {
		return
	}
	p.held, p.limit = true, 0
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

// wait blocks while the proxy is frozen.
func (p *Proxy) wait() {
	p.mu.Lock()
	held, resumed := p.held, p.resumed
	p.mu.Unlock()
	if held {
		<-resumed
	}
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go func() {
		_, _ = io.Copy(&proxyWriter{p: p, w: s}, c)
		s.Close()
	}()
	_, _ = io.Copy(&proxyWriter{p: p, w: c, count: true}, s)
	c.Close()
}

// proxyWriter writes to w unless the proxy is frozen; with count, what it
// writes (to the client) can trip FreezeAfter.
type proxyWriter struct {
	p     *Proxy
	w     io.Writer
	count bool
	n     int64
}

func (pw *proxyWriter) Write(b []byte) (int, error) {
	pw.p.wait()
	n, err := pw.w.Write(b)
	if pw.count {
		pw.n += int64(n)
		p := pw.p
		p.mu.Lock()
		if p.limit > 0 && pw.n >= p.limit {
			p.freezeLocked()
		}
		p.mu.Unlock()
	}
	return n, err
}
