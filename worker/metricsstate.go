package worker

import (
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/spool"
)

// metricsState is what the worker's gauges read at each scrape
// (metrics.State).
type metricsState struct{ w *Worker }

func (m metricsState) Devices() []protocol.DeviceStatus {
	out := make([]protocol.DeviceStatus, 0, len(m.w.slots))
	for _, s := range m.w.slots {
		out = append(out, s.status())
	}
	return out
}

func (m metricsState) SpoolEntries() int {
	if p, ok := m.w.cfg.Sink.(interface{ Pending() int }); ok {
		return p.Pending()
	}
	return 0
}

func (m metricsState) NATSConnected() bool    { return m.w.cfg.Conn.IsConnected() }
func (m metricsState) JetStreamAnswers() bool { return m.w.jsGate.down() == "" }
func (m metricsState) StoreAnswers() bool     { return m.w.rec.storeDown() == nil }

// The spool reports its entries (benchfleet_spool_entries) and whether it
// can take a result (/healthz).
var (
	_ interface{ Pending() int } = (*spool.Spool)(nil)
	_ SinkChecker                = (*spool.Spool)(nil)
	_ SinkChecker                = DirectSink{}
)
