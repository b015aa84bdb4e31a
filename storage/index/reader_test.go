package index

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// TestIndexPartReadableByArrow reads a compacted part with Apache Arrow's Go
// Parquet implementation (an independent reader: the one DuckDB and Spark
// users would recognise) and checks the schema, row count and values.
func TestIndexPartReadableByArrow(t *testing.T) {
	t.Parallel()
	_, o, data := onePart(t, 40)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	tbl, err := pqarrow.ReadTable(t.Context(), bytes.NewReader(data), parquet.NewReaderProperties(mem),
		pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatalf("arrow cannot read the part: %v", err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 40 {
		t.Fatalf("arrow reads %d rows, want 40", tbl.NumRows())
	}
	want := []string{"run", "job", "run_created_at", "date", "pool", "runner", "status", "error_class", "error_message",
		"attempt", "started_at", "finished_at", "worker_id", "worker_host", "device_id", "device_arch", "model", "test",
		"batch_size", "loop_count", "warmup_count", "data_format", "input_size", "project", "repo", "commit", "branch",
		"compile_s", "warmup_s", "timing_s", "pcc_s", "upload_s", "total_samples", "total_time_s", "samples_per_sec",
		"iter_min_ms", "iter_p50_ms", "iter_p90_ms", "iter_p99_ms", "iter_max_ms", "iter_mean_ms", "iter_stddev_ms",
		"pcc_value", "pcc_min", "pcc_passed", "upstream", "labels", "telemetry_samples", "power_w_min", "power_w_mean",
		"power_w_max", "temperature_c_min", "temperature_c_mean", "temperature_c_max", "report_model", "ci_run_id",
		"build_kind", "build_commit", "build_cache", "setup_s", "doc"}
	var got []string
	for _, f := range tbl.Schema().Fields() {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("columns\n got  %v\n want %v", got, want)
	}
	col := func(name string) arrow.Array {
		i := tbl.Schema().FieldIndices(name)[0]
		c := tbl.Column(i).Data()
		if len(c.Chunks()) != 1 {
			t.Fatalf("column %s: %d chunks", name, len(c.Chunks()))
		}
		return c.Chunk(0)
	}
	if ts, ok := tbl.Schema().Field(tbl.Schema().FieldIndices("run_created_at")[0]).Type.(*arrow.TimestampType); !ok ||
		ts.Unit != arrow.Microsecond || ts.TimeZone != "UTC" {
		t.Fatalf("run_created_at type %v, want timestamp[us, UTC]", ts)
	}
	// Every synthetic result must be there with its values.
	want40 := map[string]*protocol.Result{}
	for i := range 40 {
		r := SynthResult(i, o)
		want40[r.Job] = r
	}
	jobs := col("job").(*array.String)
	models := col("model").(*array.String)
	dates := col("date").(*array.String)
	created := col("run_created_at").(*array.Timestamp)
	batch := col("batch_size").(*array.Int32)
	sps := col("samples_per_sec").(*array.Float64)
	passed := col("pcc_passed").(*array.Boolean)
	errClass := col("error_class").(*array.String)
	labels := col("labels").(*array.String)
	docs := col("doc").(*array.String)
	for i := range int(tbl.NumRows()) {
		r := want40[jobs.Value(i)]
		if r == nil {
			t.Fatalf("row %d: unknown job %q", i, jobs.Value(i))
		}
		delete(want40, r.Job)
		if models.Value(i) != r.Benchmark.Model || dates.Value(i) != storage.DatePartition(r.RunCreatedAt) ||
			int(batch.Value(i)) != r.Benchmark.BatchSize || sps.Value(i) != r.Measurements.SamplesPerSec ||
			passed.Value(i) != r.PCC.Passed || labels.Value(i) != `{"sim.duration":"10s","trigger":"nightly"}` {
			t.Fatalf("row %d (%s): values differ from the result", i, r.Job)
		}
		if got := created.Value(i).ToTime(arrow.Microsecond); !got.Equal(r.RunCreatedAt.Truncate(time.Microsecond)) {
			t.Fatalf("row %d: run_created_at %v, want %v", i, got, r.RunCreatedAt)
		}
		if r.Error == nil && !errClass.IsNull(i) || r.Error != nil && errClass.Value(i) != r.Error.Class {
			t.Fatalf("row %d: error_class %q (null %v), want %+v", i, errClass.Value(i), errClass.IsNull(i), r.Error)
		}
		doc, err := protocol.DecodeResult([]byte(docs.Value(i)))
		if err != nil || doc.Job != r.Job || !doc.StartedAt.Equal(r.StartedAt) {
			t.Fatalf("row %d: doc does not decode to the result: %v", i, err)
		}
	}
	if len(want40) != 0 {
		t.Fatalf("%d results missing from the part", len(want40))
	}
}
