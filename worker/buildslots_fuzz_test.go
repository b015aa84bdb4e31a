package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	_ "github.com/benchfleet/benchfleet/device/cpu"
	_ "github.com/benchfleet/benchfleet/device/harness"
	_ "github.com/benchfleet/benchfleet/device/sim"
	"github.com/benchfleet/benchfleet/worker"
	"github.com/benchfleet/benchfleet/worker/configfile"
)

// FuzzWorkerConfig: the worker config YAML never panics the strict
// decoder, the timeouts or the slot builder (discovery off: no host access).
//
//	go test ./worker -run '^$' -fuzz '^FuzzWorkerConfig$' -fuzztime 30s
func FuzzWorkerConfig(f *testing.F) {
	f.Add([]byte("nats: nats://a:4222\nstore: file:///tmp/x\nid: w1\nslots:\n  - {pool: cpu, runner: cpu, count: 2}\n  - {pool: sim, count: 3}\ntimeouts: {job: 30m, drain: 10m}\n"))
	f.Add([]byte("slots: [{pool: n150, runner: forge, devices: [\"0\", \"1\"]}]\nforge: {workdir: /nonexistent}\n"))
	f.Add([]byte("slots: [{pool: sim, count: -1}]\n"))
	f.Add([]byte("timeouts: {job: -5s}\n"))
	f.Add([]byte("unknown: 1\n"))
	f.Add([]byte("slots: [{pool: '../x', devices: ['../../etc']}]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "w.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wf, err := configfile.Load(path)
		if err != nil {
			return
		}
		if _, _, err := wf.Timeouts.Durations(); err != nil {
			return
		}
		wf.Discovery.Enabled = false
		for _, s := range wf.Slots {
			if s.Count > 64 {
				return
			}
		}
		_, _ = worker.BuildSlots(context.Background(), wf, "", t.TempDir(), nil, zerolog.Nop())
	})
}
