package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/storagetest"
	"github.com/rs/zerolog"
)

// testPartSize keeps the multipart tests small: S3's minimum part.
const testPartSize = storage.MinS3PartSize

// s3Config is the config of a bucket on srv under prefix, with static
// credentials (so tests stay parallel) and short retries.
func s3Config(srv *s3test.Server, prefix string) storage.S3Config {
	return storage.S3Config{
		Bucket:          srv.Bucket,
		Prefix:          prefix,
		Endpoint:        srv.Endpoint,
		Region:          s3test.Region,
		PathStyle:       true,
		AccessKeyID:     srv.AccessKey,
		SecretAccessKey: srv.SecretKey,
		PartSize:        testPartSize,
		MaxRetries:      2,
		RetryWaitMin:    10 * time.Millisecond,
		RetryWaitMax:    50 * time.Millisecond,
		CallTimeout:     10 * time.Second,
	}
}

func newS3Bucket(t *testing.T, cfg storage.S3Config) *storage.S3Bucket {
	t.Helper()
	b, err := storage.NewS3Bucket(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestS3BucketConformance(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	// One server, a fresh prefix per subtest: the prefix is part of what
	// is tested (keys under other prefixes must not show up).
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		return newS3Bucket(t, s3Config(srv, "conf/"+strings.ReplaceAll(t.Name(), "/", "-")))
	})
}

// Through a wrapper (storage.Observe) the S3 bucket still conforms.
func TestS3BucketConformanceObserved(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		b := newS3Bucket(t, s3Config(srv, "obs/"+strings.ReplaceAll(t.Name(), "/", "-")))
		return storage.Observe(b, func(string, error, time.Duration) {})
	})
}

func TestS3BucketConformanceNoPrefix(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		cfg := s3Config(srv, "")
		cfg.Bucket = srv.NewBucket(t)
		return newS3Bucket(t, cfg)
	})
}

func TestS3PrefixIsolation(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := t.Context()
	a := newS3Bucket(t, s3Config(srv, "farm"))
	b := newS3Bucket(t, s3Config(srv, "farmer"))
	if err := a.Put(ctx, "x/1", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "x/1", strings.NewReader("b")); err != nil {
		t.Fatal(err)
	}
	// The object is at farm/x/1 in the bucket.
	out, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("farm/x/1")})
	if err != nil || aws.ToInt64(out.ContentLength) != 1 {
		t.Fatalf("HeadObject(farm/x/1) = %v, %v", out, err)
	}
	for _, bk := range []*storage.S3Bucket{a, b} {
		var keys []string
		for k, err := range bk.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		if len(keys) != 1 || keys[0] != "x/1" {
			t.Fatalf("List = %q, want [x/1]", keys)
		}
	}
}

func TestS3OpenURL(t *testing.T) {
	// Not parallel: SetEnv points the standard AWS chain at the server.
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := t.Context()
	log := zerolog.Nop()

	b, err := storage.Open(ctx, srv.URL("viaurl")+"&part_size=5MiB&timeout=5s", log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Put(ctx, "k", strings.NewReader("v"), storage.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("viaurl/k")}); err != nil {
		t.Fatalf("object not under the URL's prefix: %v", err)
	}

	// A missing bucket is an error naming it, unless create=true.
	missing := strings.Replace(srv.URL("p"), srv.Bucket, "nosuch-"+srv.Bucket, 1)
	if _, err := storage.Open(ctx, missing, log); err == nil || !strings.Contains(err.Error(), "does not exist") ||
		!strings.Contains(err.Error(), "create=true") {
		t.Fatalf("Open(missing bucket) error = %v", err)
	}
	created, err := storage.Open(ctx, missing+"&create=true", log)
	if err != nil {
		t.Fatalf("Open(create=true): %v", err)
	}
	defer created.Close()
	if err := created.Put(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	// Opening an existing bucket with create=true is fine too.
	again, err := storage.Open(ctx, missing+"&create=true", log)
	if err != nil {
		t.Fatalf("Open(create=true, exists): %v", err)
	}
	again.Close()
}

func TestS3URLErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"s3:///prefix", "no bucket"},
		{"s3://AKIA:SECRET@bucket/p", "credentials in the URL"},
		{"s3://bucket/p?nope=1", `unknown parameter "nope"`},
		{"s3://bucket/p?path_style=maybe", "path_style"},
		{"s3://bucket/p?part_size=1MiB", "PartSize"},
		{"s3://bucket/p?part_size=lots", "part_size"},
		{"s3://bucket/p?timeout=-1s", "timeout"},
		{"s3://bucket/p?endpoint=ftp://x", "Endpoint"},
		{"s3://bucket/../up", "Prefix"},
	} {
		_, err := storage.Open(t.Context(), tc.url, zerolog.Nop())
		if !errors.Is(err, storage.ErrBadStoreURL) {
			t.Errorf("Open(%q) error = %v, want one matching ErrBadStoreURL", tc.url, err)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error = %v, want it to mention %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Open(%q) error leaks the secret: %v", tc.url, err)
		}
	}
}

func TestS3Unavailable(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	var logs lockedBuf
	cfg := s3Config(srv, "outage")
	cfg.Log = zerolog.New(&logs).Level(zerolog.DebugLevel)
	b := newS3Bucket(t, cfg)
	ctx := t.Context()
	defer func() {
		if strings.Contains(logs.String(), srv.SecretKey) || strings.Contains(logs.String(), srv.AccessKey) {
			t.Errorf("logs carry credentials:\n%s", logs.String())
		}
		if !strings.Contains(logs.String(), "retrying s3 request") {
			t.Errorf("retries were not logged at debug level:\n%s", logs.String())
		}
	}()
	if err := b.Put(ctx, "before", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	start := time.Now()
	checks := map[string]error{}
	checks["put"] = b.Put(ctx, "k", strings.NewReader("x"), storage.IfAbsent())
	_, checks["get"] = b.Get(ctx, "before")
	_, checks["exists"] = b.Exists(ctx, "before")
	_, checks["attributes"] = b.Attributes(ctx, "before")
	checks["delete"] = b.Delete(ctx, "before")
	for _, err := range b.List(ctx, "") {
		checks["list"] = err
		break
	}
	for op, err := range checks {
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("%s while the server is down: error = %v, want ErrUnavailable", op, err)
		}
		if err != nil && strings.Contains(err.Error(), srv.SecretKey) {
			t.Errorf("%s error leaks the secret key", op)
		}
		var target interface{ ErrorCode() string }
		if errors.As(err, &target) {
			t.Errorf("%s error exposes an SDK error type: %T", op, target)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("six calls against a down server took %s; retries are not bounded", d)
	}

	// The caller's cancellation is reported as such, not as an outage.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Put(cctx, "k", strings.NewReader("x")); !errors.Is(err, context.Canceled) || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("cancelled Put error = %v", err)
	}

	srv.Start()
	if err := b.Put(ctx, "k", strings.NewReader("x"), storage.IfAbsent()); err != nil {
		t.Fatalf("Put after restart: %v", err)
	}
	rc, err := b.Get(ctx, "before")
	if err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
	rc.Close()
}

// A failed multipart upload is aborted: no parts linger on the server.
func TestS3MultipartAbort(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	b := newS3Bucket(t, s3Config(srv, "mp"))
	ctx := t.Context()
	r := &breakAfter{data: bytes.Repeat([]byte("x"), 3*testPartSize), n: testPartSize + testPartSize/2}
	if err := b.Put(ctx, "big", r); err == nil || !errors.Is(err, errBroke) {
		t.Fatalf("Put with a reader failing mid-part 2: error = %v", err)
	}
	out, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left after a failed Put", len(out.Uploads))
	}
	if ok, _ := b.Exists(ctx, "big"); ok {
		t.Fatal("failed multipart Put left an object")
	}
}

var errBroke = errors.New("broke")

type breakAfter struct {
	data []byte
	n    int
}

func (r *breakAfter) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errBroke
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	r.n -= n
	return n, nil
}

type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// On S3 a query over compacted dates costs the same number of requests
// however many results the dates hold: per date one listing of its
// index folder and one read of its part, plus the folder listings; a late
// result adds its one read, not a listing. The JSON scan's requests grow
// with the results.
func TestS3QueryRequestsIndependentOfResults(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	end := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	f := storage.Filter{Model: "resnet50", Since: end.AddDate(0, 0, -89).Truncate(24 * time.Hour)}
	measure := func(results int) (index, scan storage.S3RequestCounts, b *storage.S3Bucket) {
		b = newS3Bucket(t, s3Config(srv, fmt.Sprintf("reqs-%d", results)))
		o := storage.SynthOptions{Results: results, Days: 90, JobsPerRun: 4, End: end}
		if err := storage.WriteSynth(t.Context(), b, o); err != nil {
			t.Fatal(err)
		}
		if _, err := storage.Compact(t.Context(), b, storage.CompactOptions{}); err != nil {
			t.Fatal(err)
		}
		before := b.Requests()
		rs, st, err := storage.Query(t.Context(), b, f)
		if err != nil {
			t.Fatal(err)
		}
		index = b.Requests().Sub(before)
		if st.IndexPartitions != 90 || st.JSONRead != 0 {
			t.Fatalf("%d results: stats %+v, want 90 dates from their parts", results, st)
		}
		before = b.Requests()
		want, _, err := storage.QueryJSON(t.Context(), b, f)
		if err != nil {
			t.Fatal(err)
		}
		scan = b.Requests().Sub(before)
		if len(rs) != len(want) || len(rs) == 0 {
			t.Fatalf("%d results: index %d, json %d", results, len(rs), len(want))
		}
		t.Logf("%6d results over 90 compacted days: index query %s; json scan %s", results, index, scan)
		return index, scan, b
	}
	small, smallScan, _ := measure(360)
	large, largeScan, b := measure(1440)
	if small != large {
		t.Fatalf("index query requests %s for 360 results, %s for 1440: want the same", small, large)
	}
	if small.Total() > 2+2*90 {
		t.Fatalf("index query: %s, want at most 2 folder listings and 2 requests per date", small)
	}
	if largeScan.Total() <= smallScan.Total() {
		t.Fatalf("json scan: %s vs %s, want it to grow with the results", smallScan, largeScan)
	}

	// A late result for a compacted date: one more read, no listing.
	late := storage.SynthResult(5, storage.SynthOptions{Results: 1440, Days: 90, JobsPerRun: 4, End: end})
	late.Job, late.Benchmark.Model = "jlate", "resnet50"
	if _, err := storage.PutResult(t.Context(), b, late); err != nil {
		t.Fatal(err)
	}
	before := b.Requests()
	rs, _, err := storage.Query(t.Context(), b, f)
	if err != nil {
		t.Fatal(err)
	}
	withLate := b.Requests().Sub(before)
	if withLate.List != large.List || withLate.Get != large.Get+1 {
		t.Fatalf("with a late result: %s, want %s plus one get", withLate, large)
	}
	found := false
	for _, r := range rs {
		found = found || r.Job == "jlate"
	}
	if !found {
		t.Fatal("late result missing from the query")
	}
}
