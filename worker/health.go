package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchfleet/benchfleet/storage"
)

// SinkChecker is implemented by a Sink that can say whether it can take a
// result now (spool.Spool: its directory takes a file; DirectSink: the
// store answers).
type SinkChecker interface {
	Check(ctx context.Context) error
}

// Check implements SinkChecker: the store answers an existence query
// within StoreCallTimeout (and ctx).
func (d DirectSink) Check(ctx context.Context) error {
	if _, err := storage.WithCallTimeout(d.Bucket, StoreCallTimeout).Exists(ctx, healthProbeKey); err != nil {
		if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("store not answering: %w", err)
		}
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// healthProbeKey is the key DirectSink.Check asks the store about; it is
// never written.
const healthProbeKey = "healthz/probe"

// healthTimeout bounds one health check.
const healthTimeout = 3 * time.Second

// Healthy reports nil while the worker can do its work: it has started and
// not stopped, its NATS connection is up and JetStream answers it (its
// last fetch and heartbeat were answered: a cluster that lost its quorum
// answers neither), it is not blocked for want of a
// place to record results, and its sink can take a result (the spool's
// directory, or the store without a spool). The error says what is wrong.
// A store that does not answer while the spool takes the results is not
// an error: Degraded says so.
func (w *Worker) Healthy(ctx context.Context) error {
	if !w.started.Load() {
		return errors.New("not started")
	}
	select {
	case <-w.done:
		return errors.New("stopped")
	default:
	}
	if !w.cfg.Conn.IsConnected() {
		return fmt.Errorf("nats: %s", w.cfg.Conn.Status())
	}
	if down := w.jsGate.down(); down != "" {
		return errors.New(down)
	}
	if why, _ := w.rec.blockedBy(); why != nil {
		return errors.New(w.rec.describe())
	}
	if c, ok := w.cfg.Sink.(SinkChecker); ok {
		cctx, cancel := context.WithTimeout(ctx, healthTimeout)
		defer cancel()
		if err := c.Check(cctx); err != nil {
			return err
		}
	}
	return nil
}

// Degraded says what is wrong with the result store while the worker can
// still do its work ("store not answering since ...; results are spooled
// locally (N pending)"), "" when nothing is. The worker's status (the
// bench-workers record) carries the same text as Store.
func (w *Worker) Degraded() string { return w.rec.describe() }

// Handler serves the worker's HTTP endpoints: /metrics (Prometheus text
// format, the registry of Config.Registry when it can be gathered; 404
// without one) and /healthz (200 "ok" while Healthy, followed by what
// Degraded says when it says something; else 503 with the reason).
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	if g, ok := w.cfg.Registry.(prometheus.Gatherer); ok && g != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: nil}))
	}
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := w.Healthy(r.Context()); err != nil {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(rw, "unhealthy: %v\n", err)
			return
		}
		if d := w.Degraded(); d != "" {
			fmt.Fprintf(rw, "ok: %s\n", d)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	return mux
}
