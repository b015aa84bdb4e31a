// Package index is the Parquet index of the results and the queries over
// it: Compact (and Maintain) writes one sealed part per date partition,
// Query answers a Filter from the parts and the JSON results they do not
// cover, and QueryJSON answers it from the JSON results alone
// (docs/schema-parquet.md).
package index

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// The index (docs/schema-parquet.md) is Hive-partitioned Parquet under index/v1/:
//
//	index/v1/date=<YYYY-MM-DD>/part-<id>.parquet
//
// one part file per date partition holding one row per result of that date,
// flat columns (docs/schema-parquet.md) plus the exact result document in
// the column doc. <id> is the first 16 hex digits of the SHA-256 of the
// sorted result keys the part covers, so the name itself is the manifest: a
// partition is up to date exactly when its only part is named after the
// result keys listed under results/v1/date=<date>/ now. Compaction is
// therefore idempotent (same keys, same name, nothing to do) and a result
// that arrives late for a compacted date changes the expected name, so both
// compact (rewrite) and Query (read the JSON the part does not cover) notice.
//
// Compact writes the new part before it deletes the old ones. A reader that
// finds a part gone, unreadable or stale reads that partition's JSON instead,
// so the index can only make a query faster, never lose a result.

// SchemaVersion is recorded in every part's key-value metadata.
const SchemaVersion = "benchfleet.index/v1"

// indexRow is one row of the index: one result. Column names are the
// contract documented in docs/schema-parquet.md.
type indexRow struct {
	Run          string    `parquet:"run,dict,zstd"`
	Job          string    `parquet:"job,zstd"`
	RunCreatedAt time.Time `parquet:"run_created_at,timestamp(microsecond:utc)"`
	Date         string    `parquet:"date,dict"`
	Pool         string    `parquet:"pool,dict"`
	Runner       string    `parquet:"runner,dict"`
	Status       string    `parquet:"status,dict"`
	ErrorClass   string    `parquet:"error_class,optional,dict"`
	ErrorMessage string    `parquet:"error_message,optional,zstd"`
	Attempt      int32     `parquet:"attempt"`
	StartedAt    time.Time `parquet:"started_at,timestamp(microsecond:utc)"`
	FinishedAt   time.Time `parquet:"finished_at,timestamp(microsecond:utc)"`
	WorkerID     string    `parquet:"worker_id,dict"`
	WorkerHost   string    `parquet:"worker_host,dict"`
	DeviceID     string    `parquet:"device_id,dict"`
	DeviceArch   string    `parquet:"device_arch,optional,dict"`
	Model        string    `parquet:"model,dict"`
	Test         string    `parquet:"test,optional,dict"`
	BatchSize    int32     `parquet:"batch_size"`
	LoopCount    int32     `parquet:"loop_count"`
	WarmupCount  int32     `parquet:"warmup_count"`
	DataFormat   string    `parquet:"data_format,dict"`
	InputSize    int32     `parquet:"input_size"`
	Project      string    `parquet:"project,optional,dict"`
	Repo         string    `parquet:"repo,optional,dict"`
	Commit       string    `parquet:"commit,optional,dict"`
	Branch       string    `parquet:"branch,optional,dict"`
	CompileS     float64   `parquet:"compile_s"`
	WarmupS      float64   `parquet:"warmup_s"`
	TimingS      float64   `parquet:"timing_s"`
	PCCS         float64   `parquet:"pcc_s"`
	UploadS      float64   `parquet:"upload_s"`
	TotalSamples *int64    `parquet:"total_samples,optional"`
	TotalTimeS   *float64  `parquet:"total_time_s,optional"`
	SamplesPerS  *float64  `parquet:"samples_per_sec,optional"`
	IterMinMS    *float64  `parquet:"iter_min_ms,optional"`
	IterP50MS    *float64  `parquet:"iter_p50_ms,optional"`
	IterP90MS    *float64  `parquet:"iter_p90_ms,optional"`
	IterP99MS    *float64  `parquet:"iter_p99_ms,optional"`
	IterMaxMS    *float64  `parquet:"iter_max_ms,optional"`
	IterMeanMS   *float64  `parquet:"iter_mean_ms,optional"`
	IterStdMS    *float64  `parquet:"iter_stddev_ms,optional"`
	PCCValue     *float64  `parquet:"pcc_value,optional"`
	PCCMin       float64   `parquet:"pcc_min"`
	PCCPassed    bool      `parquet:"pcc_passed"`
	Upstream     string    `parquet:"upstream,optional,zstd"`
	Labels       string    `parquet:"labels,optional,zstd"`
	// Telemetry of the timed loop and upstream facts (additive; null when
	// the result has none).
	TelemetrySamples *int32   `parquet:"telemetry_samples,optional"`
	PowerWMin        *float64 `parquet:"power_w_min,optional"`
	PowerWMean       *float64 `parquet:"power_w_mean,optional"`
	PowerWMax        *float64 `parquet:"power_w_max,optional"`
	TempCMin         *float64 `parquet:"temperature_c_min,optional"`
	TempCMean        *float64 `parquet:"temperature_c_mean,optional"`
	TempCMax         *float64 `parquet:"temperature_c_max,optional"`
	ReportModel      string   `parquet:"report_model,optional,dict"`
	CIRunID          *int64   `parquet:"ci_run_id,optional"`
	// What the result measured (additive; null for results without a
	// build, and setup_s for builds not provisioned).
	BuildKind   string   `parquet:"build_kind,optional,dict"`
	BuildCommit string   `parquet:"build_commit,optional,dict"`
	BuildCache  string   `parquet:"build_cache,optional,dict"`
	SetupS      *float64 `parquet:"setup_s,optional"`
	Doc         string   `parquet:"doc,zstd"`
}

// nz is nil for 0 (not measured), else a pointer to v.
func nz[T int64 | float64](v T) *T {
	if v == 0 {
		return nil
	}
	return &v
}

// newIndexRow flattens r; doc is its JSON document as stored.
func newIndexRow(r *protocol.Result, doc []byte) (indexRow, error) {
	row := indexRow{
		Run: r.Run, Job: r.Job, RunCreatedAt: r.RunCreatedAt.UTC(), Date: storage.DatePartition(r.RunCreatedAt),
		Pool: r.Pool, Runner: r.Runner, Status: string(r.Status), Attempt: int32(r.Attempt),
		StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt.UTC(),
		WorkerID: r.Worker.ID, WorkerHost: r.Worker.Host, DeviceID: r.Device.ID, DeviceArch: r.Device.Arch,
		Model: r.Benchmark.Model, Test: r.Benchmark.Test, BatchSize: int32(r.Benchmark.BatchSize),
		LoopCount: int32(r.Benchmark.LoopCount), WarmupCount: int32(r.Benchmark.WarmupCount),
		DataFormat: r.Benchmark.DataFormat, InputSize: int32(r.Benchmark.InputSize),
		Project: r.Source.Project, Repo: r.Source.Repo, Commit: r.Source.Commit, Branch: r.Source.Branch,
		CompileS: r.Phases.CompileS, WarmupS: r.Phases.WarmupS, TimingS: r.Phases.TimingS, PCCS: r.Phases.PCCS,
		UploadS: r.Phases.UploadS, PCCMin: r.PCC.Min, PCCPassed: r.PCC.Passed, Upstream: r.Upstream,
	}
	// What was not measured is null, as in the JSON document.
	ms := r.Measurements
	row.TotalSamples, row.TotalTimeS, row.SamplesPerS = nz(ms.TotalSamples), nz(ms.TotalTimeS), nz(ms.SamplesPerSec)
	it := ms.IterationMS
	row.IterMinMS, row.IterP50MS, row.IterP90MS, row.IterP99MS = nz(it.Min), nz(it.P50), nz(it.P90), nz(it.P99)
	row.IterMaxMS, row.IterMeanMS, row.IterStdMS = nz(it.Max), nz(it.Mean), nz(it.Stddev)
	if it != (protocol.IterationMS{}) && row.IterStdMS == nil {
		row.IterStdMS = new(float64) // a measured stddev may be 0
	}
	row.PCCValue = nz(r.PCC.Value)
	if r.Error != nil {
		row.ErrorClass, row.ErrorMessage = r.Error.Class, r.Error.Message
	}
	if tm := r.Telemetry; tm != nil {
		n := int32(tm.Samples)
		row.TelemetrySamples = &n
		if p := tm.PowerW; p != nil {
			row.PowerWMin, row.PowerWMean, row.PowerWMax = &p.Min, &p.Mean, &p.Max
		}
		if t := tm.TemperatureC; t != nil {
			row.TempCMin, row.TempCMean, row.TempCMax = &t.Min, &t.Mean, &t.Max
		}
	}
	if r.Report != nil {
		row.ReportModel = r.Report.Model
	}
	if r.Source.CIRunID > 0 {
		id := r.Source.CIRunID
		row.CIRunID = &id
	}
	if b := r.Build; b != nil {
		row.BuildKind, row.BuildCommit, row.BuildCache = b.Kind, b.Commit, b.Cache
	}
	row.SetupS = nz(r.Phases.SetupS)
	if len(r.Labels) > 0 {
		l, err := json.Marshal(r.Labels) // map keys sorted: deterministic
		if err != nil {
			return row, err
		}
		row.Labels = string(l)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return row, err
	}
	row.Doc = buf.String()
	return row, nil
}

// partition is what the store holds for one date: the JSON result keys, the
// index parts, and the seal protocol's markers (seal.go).
type partition struct {
	date      string
	keys      []string // results/v1/date=<date>/..., sorted
	parts     []string // index/v1/date=<date>/part-*.parquet, sorted
	lates     []string // result keys named by late markers, sorted
	compacted bool     // the date's _compacted marker exists
}

// sealed reports whether the part at key carries the seal.
func sealed(ctx context.Context, b storage.Bucket, key string) (bool, error) {
	v, err := partMetadata(ctx, b, key, sealKey)
	return v == sealVersion, err
}

// partMetadata reads one key of a part's file metadata.
func partMetadata(ctx context.Context, b storage.Bucket, key, name string) (string, error) {
	ra, size, closeFn, err := openReaderAt(ctx, b, key)
	if err != nil {
		return "", err
	}
	defer closeFn()
	pf, err := parquet.OpenFile(ra, size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return "", fmt.Errorf("storage: index part %q is unreadable: %w", key, err)
	}
	v, _ := pf.Lookup(name)
	return v, nil
}

// current reports whether the partition's index covers exactly its JSON
// results: one part, named after the keys listed now.
func (p *partition) current() bool {
	return len(p.parts) == 1 && len(p.keys) > 0 && p.parts[0] == storage.IndexPartKey(p.date, storage.IndexPartID(p.keys))
}

// parallel runs fn(0..n-1) on at most workers goroutines and returns the
// first error; after an error or a done ctx no new calls start.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	if workers > n {
		workers = n
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first == nil && ctx.Err() != nil {
					first = ctx.Err()
				}
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// CompactOptions modify Compact. The zero value compacts every partition
// that changed.
type CompactOptions struct {
	// Since limits compaction to date partitions on or after this time's UTC
	// date; zero means all.
	Since time.Time
	// Force rewrites every partition even when its part is current (to
	// repair a damaged part file).
	Force bool
	// Workers is the number of partitions compacted at once; 0 means 4.
	Workers int
}

// CompactStats say what Compact did.
type CompactStats struct {
	// Partitions is the number of date partitions examined.
	Partitions int
	// Written is the number of partitions whose part was (re)written.
	Written int
	// Current is the number of partitions whose part was already current.
	Current int
	// Rows is the number of rows in the parts written.
	Rows int
	// Sealed is the number of partitions whose part was current but
	// written without a seal (by a benchfleet before seals), rewritten under
	// the same name with the same rows only to record the seal.
	Sealed int
	// LateCleared is the number of late markers deleted because a part now
	// covers their results.
	LateCleared int
	// Removed is the number of stale part files deleted.
	Removed int
	// Unreadable are the result keys that could not be decoded and were left
	// out of the index (QueryJSON skips them the same way).
	Unreadable []string
}

// Compact brings the index up to date: for every date partition whose part
// does not cover exactly the JSON results of that date, it writes one new
// sealed part covering all of them and then deletes the old parts. Running
// it again without new results writes no new part and changes no part's
// name or rows; the one thing it may still do is seal a current part written
// before seals existed (Sealed). Safe to run while results are being
// written and queried (seal.go); two concurrent compactions may leave
// two parts for a date, which readers handle and the next compaction merges.
func Compact(ctx context.Context, b storage.Bucket, opts CompactOptions) (CompactStats, error) {
	var st CompactStats
	since := ""
	if !opts.Since.IsZero() {
		since = storage.DatePartition(opts.Since)
	}
	dates, err := partitionDates(ctx, b, since)
	if err != nil {
		return st, fmt.Errorf("storage: compact: %w", err)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 4
	}
	var mu sync.Mutex
	err = parallel(ctx, len(dates), workers, func(i int) error {
		date := dates[i]
		// The marker first, then the listing (seal.go).
		if err := ensureCompacted(ctx, b, date); err != nil {
			return err
		}
		ps, err := listPartitionPrefixes(ctx, b, []string{date + "/"}, date)
		if err != nil || len(ps) == 0 {
			return err
		}
		p := ps[0]
		if len(p.keys) == 0 && len(p.parts) == 0 {
			return nil // only markers: nothing to index
		}
		current := !opts.Force && p.current()
		var isSealed bool
		if current {
			if isSealed, err = sealed(ctx, b, p.parts[0]); err != nil && ctx.Err() != nil {
				return err
			}
		}
		var rows int
		var bad []string
		if !current || !isSealed {
			if rows, bad, err = compactPartition(ctx, b, p); err != nil {
				mu.Lock()
				st.Unreadable = append(st.Unreadable, bad...)
				mu.Unlock()
				return err
			}
		}
		cleared, err := clearLates(ctx, b, p)
		mu.Lock()
		defer mu.Unlock()
		st.Partitions++
		st.Unreadable = append(st.Unreadable, bad...)
		st.LateCleared += cleared
		switch {
		case current && isSealed:
			st.Current++
		case current:
			st.Sealed++ // same name, same rows: the index content is unchanged
		case len(p.keys) > 0:
			st.Written++
			st.Rows += rows
			st.Removed += len(p.parts) - btoi(slices.Contains(p.parts, storage.IndexPartKey(p.date, storage.IndexPartID(p.keys))))
		default:
			st.Removed += len(p.parts)
		}
		return err
	})
	slices.Sort(st.Unreadable)
	if err != nil {
		return st, fmt.Errorf("storage: compact: %w", err)
	}
	return st, nil
}

// partitionDates names the date partitions on or after since that hold
// results or index objects: from the bucket's folders where it can name
// them (storage.FolderLister), else from a listing of both trees.
func partitionDates(ctx context.Context, b storage.Bucket, since string) ([]string, error) {
	if fl, ok := storage.As[storage.FolderLister](b); ok {
		return folderDates(ctx, fl, since)
	}
	parts, err := listPartitions(ctx, b, since)
	if err != nil {
		return nil, err
	}
	dates := make([]string, len(parts))
	for i, p := range parts {
		dates[i] = p.date
	}
	return dates, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compactPartition writes the sealed part covering p.keys, then deletes p's
// other parts. A partition without results loses its parts. The caller has
// written the date's _compacted marker before listing p (seal.go).
func compactPartition(ctx context.Context, b storage.Bucket, p *partition) (rows int, bad []string, err error) {
	var key string
	if len(p.keys) > 0 {
		key = storage.IndexPartKey(p.date, storage.IndexPartID(p.keys))
		data, n, unreadable, err := buildPart(ctx, b, p)
		if err != nil {
			return 0, unreadable, err
		}
		bad, rows = unreadable, n
		if err := b.Put(ctx, key, bytes.NewReader(data), storage.ContentType("application/vnd.apache.parquet"), storage.Size(int64(len(data)))); err != nil {
			return 0, bad, err
		}
	}
	for _, old := range p.parts {
		if old == key {
			continue
		}
		if err := b.Delete(ctx, old); err != nil {
			return rows, bad, err
		}
	}
	return rows, bad, nil
}

// buildPart reads every JSON result of p and encodes the part file. Rows are
// sorted by model, pool, branch, run creation time, run and job, so rows a
// typical history query wants sit together in few pages.
func buildPart(ctx context.Context, b storage.Bucket, p *partition) (data []byte, n int, bad []string, err error) {
	rows := make([]indexRow, len(p.keys))
	ok := make([]bool, len(p.keys))
	var mu sync.Mutex
	err = parallel(ctx, len(p.keys), 8, func(i int) error {
		key := p.keys[i]
		doc, err := getBytes(ctx, b, key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		r, derr := protocol.DecodeResult(doc)
		var row indexRow
		if derr == nil {
			row, derr = newIndexRow(r, doc)
		}
		if derr != nil {
			mu.Lock()
			bad = append(bad, key)
			mu.Unlock()
			return nil
		}
		rows[i], ok[i] = row, true
		return nil
	})
	if err != nil {
		return nil, 0, bad, err
	}
	kept := rows[:0]
	for i := range rows {
		if ok[i] {
			kept = append(kept, rows[i])
		}
	}
	slices.SortFunc(kept, func(a, b indexRow) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Branch, b.Branch),
			a.RunCreatedAt.Compare(b.RunCreatedAt), cmp.Compare(a.Run, b.Run), cmp.Compare(a.Job, b.Job))
	})
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[indexRow](&buf,
		parquet.CreatedBy("benchfleet", "", ""),
		parquet.KeyValueMetadata("benchfleet.schema", SchemaVersion),
		parquet.KeyValueMetadata("benchfleet.date", p.date),
		parquet.KeyValueMetadata(sealKey, sealVersion),
		parquet.PageBufferSize(indexPageSize),
		parquet.MaxRowsPerRowGroup(indexRowGroupRows),
	)
	if _, err := w.Write(kept); err != nil {
		return nil, 0, bad, fmt.Errorf("encode part for date %s: %w", p.date, err)
	}
	if err := w.Close(); err != nil {
		return nil, 0, bad, fmt.Errorf("encode part for date %s: %w", p.date, err)
	}
	return buf.Bytes(), len(kept), bad, nil
}

const (
	// indexPageSize bounds a page: small enough that a query decompresses
	// only the doc pages holding the rows it wants.
	indexPageSize = 32 << 10
	// indexRowGroupRows bounds a row group, so column statistics can prune
	// row groups of large partitions.
	indexRowGroupRows = 8192
)

// getBytes reads the whole object at key.
func getBytes(ctx context.Context, b storage.Bucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("storage: read %q: %w", key, err)
	}
	return buf.Bytes(), nil
}
