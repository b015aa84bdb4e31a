package protocol

import (
	"errors"
	"testing"
	"time"
)

// A queued job gets the defaults submit gives; the required fields stay
// required.
func TestDecodeQueuedJobDefaults(t *testing.T) {
	stored := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	j, err := DecodeQueuedJob([]byte(`{"id":"j1","run":"r1","benchmark":{"model":"mlp","batch_size":4,"loop_count":100}}`),
		JobSubject("cpu", PriorityHigh), stored)
	if err != nil {
		t.Fatal(err)
	}
	if j.Schema != SchemaJob || j.Pool != "cpu" || j.Priority != PriorityHigh || j.Runner != RunnerCPU ||
		j.Benchmark.WarmupCount != 32 || j.Benchmark.DataFormat != FormatBfloat16 || j.Limits.PCCMin != 0 || !j.CreatedAt.Equal(stored) {
		t.Errorf("defaults: %+v", j)
	}
	// Without an id, the job's id is the id of its content.
	n, err := DecodeQueuedJob([]byte(`{"run":"r1","benchmark":{"model":"mlp","batch_size":4,"loop_count":4}}`), JobSubject("cpu", PriorityHigh), stored)
	if err != nil || n.ID != JobID("r1", n.Cell()) || n.CheckID() != nil {
		t.Fatalf("no id: %v, id %q", err, n.ID)
	}
	for _, c := range []struct{ name, doc, field string }{
		{"no run", `{"benchmark":{"model":"mlp","batch_size":4,"loop_count":4}}`, "id"},
		{"no batch", `{"id":"j1","run":"r1","benchmark":{"model":"mlp","loop_count":4}}`, "benchmark.batch_size"},
		{"no loop", `{"id":"j1","run":"r1","benchmark":{"model":"mlp","batch_size":4}}`, "benchmark.loop_count"},
	} {
		_, err := DecodeQueuedJob([]byte(c.doc), JobSubject("n150", PriorityNormal), stored)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want a %s error", c.name, err, c.field)
		}
	}
}
