package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage/file"
)

// scrape GETs /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func healthz(base string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sumCounter adds the family's counters whose label has value.
func sumCounter(f *dto.MetricFamily, label, value string) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		if labelValue(m, label) == value {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// A worker started with --metrics-listen runs 40 sim jobs: /metrics parses
// with the Prometheus text parser, benchfleet_jobs_total{status="passed"}
// sums to 40, every family is there with its type; /healthz is 200, and
// 503 within 10 s of the NATS server going away.
func TestWorkerMetricsAndHealthz(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv := fleettest.Server(t)
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	store, err := file.NewBucket(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", fleettest.FreePort(t))
	base := "http://" + addr

	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmdline.Run(ctx, io.Discard, &errOut, "worker", "--nats", srv.ClientURL(), "--store", "file://"+storeDir,
			"--slots", "sim=4", "--id", "metrics-worker", "--spool", filepath.Join(dir, "spool"),
			"--work-dir", filepath.Join(dir, "work"), "--metrics-listen", addr, "--ack-wait", "5s", "--log-level", "warn")
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			t.Errorf("worker did not stop\n%s", errOut.String())
		}
	})
	fleettest.Eventually(t, 30*time.Second, "/healthz 200", func() bool {
		code, _ := healthz(base)
		return code == http.StatusOK
	})

	_, js := fleettest.Connect(t, srv.ClientURL())
	topo := fleettest.Topology(t, js, topology.Config{AckWait: 5 * time.Second})
	jobs := fleettest.SimJobs(t, "metrics-run", 40, map[string]string{"sim.duration": "20ms"})
	fleettest.Submit(t, js, topo, store, "metrics-run", protocol.PriorityNormal, jobs)

	var fams map[string]*dto.MetricFamily
	fleettest.Eventually(t, 90*time.Second, "40 passed jobs in /metrics", func() bool {
		fams = scrape(t, base)
		f := fams["benchfleet_jobs_total"]
		return f != nil && sumCounter(f, "status", "passed") == 40
	})
	if n := len(fleettest.Results(t, store, "metrics-run")); n != 40 {
		t.Errorf("%d results in the store, want 40", n)
	}
	want := map[string]dto.MetricType{
		"benchfleet_jobs_total":               dto.MetricType_COUNTER,
		"benchfleet_job_retries_total":        dto.MetricType_COUNTER,
		"benchfleet_dead_letters_total":       dto.MetricType_COUNTER,
		"benchfleet_job_phase_seconds":        dto.MetricType_HISTOGRAM,
		"benchfleet_claim_latency_seconds":    dto.MetricType_HISTOGRAM,
		"benchfleet_devices":                  dto.MetricType_GAUGE,
		"benchfleet_spool_entries":            dto.MetricType_GAUGE,
		"benchfleet_storage_errors_total":     dto.MetricType_COUNTER,
		"benchfleet_heartbeat_failures_total": dto.MetricType_COUNTER,
		"benchfleet_queue_depth":              dto.MetricType_GAUGE,
		"benchfleet_queue_in_flight":          dto.MetricType_GAUGE,
		"benchfleet_nats_connected":           dto.MetricType_GAUGE,
		"benchfleet_jetstream_available":      dto.MetricType_GAUGE,
		"benchfleet_store_available":          dto.MetricType_GAUGE,
		"go_goroutines":                       dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("family %s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("family %s is a %s, want %s", name, f.GetType(), typ)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// The Grafana dashboard uses only families the worker serves.
	dash, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "grafana", "benchfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(dash) {
		t.Fatal("deploy/grafana/benchfleet.json is not JSON")
	}
	used := regexp.MustCompile(`benchfleet_[a-z_]+`).FindAllString(string(dash), -1)
	for _, name := range used {
		if fams[strings.TrimSuffix(name, "_bucket")] == nil {
			t.Errorf("the dashboard uses %s, which /metrics does not serve", name)
		}
	}
	if len(used) < 10 {
		t.Errorf("the dashboard uses only %d benchfleet metrics", len(used))
	}
	if n := sumCounter(fams["benchfleet_jobs_total"], "pool", "sim"); n != 40 {
		t.Errorf("benchfleet_jobs_total{pool=sim} sums to %v, want 40", n)
	}
	if c := fams["benchfleet_claim_latency_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); c != 40 {
		t.Errorf("claim latency observed %d times, want 40 (one per first delivery)", c)
	}
	phases := map[string]uint64{}
	for _, m := range fams["benchfleet_job_phase_seconds"].GetMetric() {
		phases[labelValue(m, "phase")] = m.GetHistogram().GetSampleCount()
	}
	for _, p := range []string{"compile", "timing", "upload"} {
		if phases[p] != 40 {
			t.Errorf("phase %s observed %d times, want 40 (%v)", p, phases[p], phases)
		}
	}
	depth := map[string]bool{}
	for _, m := range fams["benchfleet_queue_depth"].GetMetric() {
		if labelValue(m, "pool") == "sim" {
			depth[labelValue(m, "priority")] = true
		}
	}
	if len(depth) != 3 {
		t.Errorf("queue depth of pool sim for priorities %v, want high, normal, low", depth)
	}
	// The slots go back to idle after their last job.
	fleettest.Eventually(t, 10*time.Second, "4 idle sim devices", func() bool {
		for _, m := range scrape(t, base)["benchfleet_devices"].GetMetric() {
			if labelValue(m, "pool") == "sim" && labelValue(m, "state") == "idle" {
				return m.GetGauge().GetValue() == 4
			}
		}
		return false
	})
	if code, body := healthz(base); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz: %d %q, want 200 ok", code, body)
	}

	// NATS goes away: /healthz says 503 within 10 s.
	srv.Shutdown()
	gone := time.Now()
	var body string
	fleettest.Eventually(t, 10*time.Second, "/healthz 503 after NATS went away", func() bool {
		var code int
		code, body = healthz(base)
		return code == http.StatusServiceUnavailable
	})
	t.Logf("/healthz 503 %s after the NATS server stopped: %s", time.Since(gone).Round(time.Millisecond), strings.TrimSpace(body))
	if !strings.Contains(body, "nats") {
		t.Errorf("/healthz body %q does not name NATS", body)
	}
}
