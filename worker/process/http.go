package process

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newRegistry is a Prometheus registry with the Go runtime and process
// collectors, for a worker's metrics.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveHTTP serves the worker's /metrics and /healthz on addr until the
// process closes.
func (p *Process) serveHTTP(addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &OptionError{Option: "--metrics-listen " + addr, Err: err}
	}
	srv := &http.Server{Handler: p.w.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error().Err(err).Msg("metrics server stopped")
		}
	}()
	p.addr = ln.Addr().String()
	tell(out, "metrics and health on http://%s/metrics and /healthz\n", ln.Addr())
	p.closes = append(p.closes, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return nil
}
