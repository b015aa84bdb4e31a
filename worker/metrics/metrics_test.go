package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/worker/metrics"
)

// state is a worker's scrape-time state, as the test sets it.
type state struct {
	devices           []protocol.DeviceStatus
	spool             int
	nats, js, storeUp bool
}

func (s *state) Devices() []protocol.DeviceStatus { return s.devices }
func (s *state) SpoolEntries() int                { return s.spool }
func (s *state) NATSConnected() bool              { return s.nats }
func (s *state) JetStreamAnswers() bool           { return s.js }
func (s *state) StoreAnswers() bool               { return s.storeUp }

// value is the metric of family name whose labels are labels (name=value
// pairs): its counter or gauge value, and whether it is there.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metric
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// The families a worker registers: every pool's series from the start,
// the counters as the worker counts, and the gauges as its state reads at
// the scrape (a device state with no device reads 0; JetStream reads down
// while NATS is).
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	st := &state{devices: []protocol.DeviceStatus{
		{ID: "sim-0", Pool: "sim", State: protocol.DeviceBusy},
		{ID: "sim-1", Pool: "sim", State: protocol.DeviceIdle},
		{ID: "cpu-0", Pool: "cpu", State: protocol.DeviceQuarantined},
	}, spool: 3, nats: true, js: true}
	m, err := metrics.NewWorker(reg, st, []string{"sim", "sim", "cpu"}, "v1.2.3", "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := value(t, reg, "benchfleet_jobs_total", "pool", "cpu", "status", "timeout"); !ok || v != 0 {
		t.Errorf("benchfleet_jobs_total{cpu,timeout} %v (there: %v), want a zero series", v, ok)
	}
	m.Recorded(&protocol.Result{Pool: "sim", Status: protocol.StatusPassed, Phases: protocol.Phases{TimingS: 1}}, true)
	m.Retried("cpu")
	m.DeadLettered("sim")
	m.StorageError(metrics.StorageOpExists)
	m.HeartbeatFailed(metrics.HeartbeatStatus)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"benchfleet_jobs_total", []string{"pool", "sim", "status", "passed"}, 1},
		{"benchfleet_storage_errors_total", []string{"op", metrics.StorageOpSpooled}, 1},
		{"benchfleet_storage_errors_total", []string{"op", metrics.StorageOpExists}, 1},
		{"benchfleet_storage_errors_total", []string{"op", metrics.StorageOpDeliver}, 0},
		{"benchfleet_job_retries_total", []string{"pool", "cpu"}, 1},
		{"benchfleet_dead_letters_total", []string{"pool", "sim"}, 1},
		{"benchfleet_heartbeat_failures_total", []string{"kind", metrics.HeartbeatStatus}, 1},
		{"benchfleet_heartbeat_failures_total", []string{"kind", metrics.HeartbeatInProgress}, 0},
		{"benchfleet_devices", []string{"pool", "sim", "state", protocol.DeviceBusy}, 1},
		{"benchfleet_devices", []string{"pool", "sim", "state", protocol.DeviceQuarantined}, 0},
		{"benchfleet_devices", []string{"pool", "cpu", "state", protocol.DeviceQuarantined}, 1},
		{"benchfleet_spool_entries", nil, 3},
		{"benchfleet_nats_connected", nil, 1},
		{"benchfleet_jetstream_available", nil, 1},
		{"benchfleet_store_available", nil, 0},
		{"benchfleet_build_info", []string{"version", "v1.2.3", "revision", "abc123"}, 1},
	} {
		if v, ok := value(t, reg, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (there: %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	st.nats = false
	if v, _ := value(t, reg, "benchfleet_jetstream_available"); v != 0 {
		t.Errorf("benchfleet_jetstream_available %v with NATS down, want 0", v)
	}
	if _, err := metrics.NewWorker(reg, st, nil, "v", ""); err == nil {
		t.Error("a second worker on one registry registered")
	}
}

// Without a registry there are no metrics, and recording costs nothing.
func TestNoRegistry(t *testing.T) {
	t.Parallel()
	m, err := metrics.NewWorker(nil, &state{}, []string{"sim"}, "v", "")
	if m != nil || err != nil {
		t.Fatalf("NewWorker(nil) = %v, %v; want nil, nil", m, err)
	}
	m.Recorded(&protocol.Result{Pool: "sim"}, false)
	m.Retried("sim")
	m.Claimed(nil, 0)
	b, err := metrics.NewBuildCache(nil, func() int64 { return 0 })
	if b != nil || err != nil {
		t.Fatalf("NewBuildCache(nil) = %v, %v; want nil, nil", b, err)
	}
	b.Setup("hit", 0)
}

// The build cache's setups by result, from zero, and its size as read at
// the scrape.
func TestBuildCacheMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	size := int64(10)
	b, err := metrics.NewBuildCache(reg, func() int64 { return size })
	if err != nil {
		t.Fatal(err)
	}
	b.Setup("miss", 0)
	size = 4096
	if v, ok := value(t, reg, "benchfleet_build_setups_total", "result", "miss"); !ok || v != 1 {
		t.Errorf("setups{miss} %v (there: %v), want 1", v, ok)
	}
	if v, ok := value(t, reg, "benchfleet_build_setups_total", "result", "error"); !ok || v != 0 {
		t.Errorf("setups{error} %v (there: %v), want a zero series", v, ok)
	}
	if v, _ := value(t, reg, "benchfleet_build_cache_bytes"); v != 4096 {
		t.Errorf("cache bytes %v, want 4096", v)
	}
}
