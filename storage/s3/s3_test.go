package s3_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/s3"
	"github.com/benchfleet/benchfleet/storage/storagetest"
	"github.com/rs/zerolog"
)

// testPartSize keeps the multipart tests small: S3's minimum part.
const testPartSize = s3.MinPartSize

func TestS3BucketConformance(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	// One server, a fresh prefix per subtest: the prefix is part of what
	// is tested (keys under other prefixes must not show up).
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		return s3test.Open(t, srv.Config("conf/"+strings.ReplaceAll(t.Name(), "/", "-")))
	})
}

func TestS3BucketConformanceNoPrefix(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	storagetest.Run(t, func(t *testing.T) storage.Bucket {
		cfg := srv.Config("")
		cfg.Bucket = srv.NewBucket(t)
		return s3test.Open(t, cfg)
	})
}

func TestS3PrefixIsolation(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := t.Context()
	a := s3test.Open(t, srv.Config("farm"))
	b := s3test.Open(t, srv.Config("farmer"))
	if err := a.Put(ctx, "x/1", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "x/1", strings.NewReader("b")); err != nil {
		t.Fatal(err)
	}
	// The object is at farm/x/1 in the bucket.
	out, err := srv.Client().HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("farm/x/1")})
	if err != nil || aws.ToInt64(out.ContentLength) != 1 {
		t.Fatalf("HeadObject(farm/x/1) = %v, %v", out, err)
	}
	for _, bk := range []*s3.Bucket{a, b} {
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

func TestS3Unavailable(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	var logs lockedBuf
	cfg := srv.Config("outage")
	cfg.Log = zerolog.New(&logs).Level(zerolog.DebugLevel)
	b := s3test.Open(t, cfg)
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
	b := s3test.Open(t, srv.Config("mp"))
	ctx := t.Context()
	r := &breakAfter{data: bytes.Repeat([]byte("x"), 3*testPartSize), n: testPartSize + testPartSize/2}
	if err := b.Put(ctx, "big", r); err == nil || !errors.Is(err, errBroke) {
		t.Fatalf("Put with a reader failing mid-part 2: error = %v", err)
	}
	out, err := srv.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
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
