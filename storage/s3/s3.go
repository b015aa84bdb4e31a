// Package s3 is the storage provider on S3 or an S3-compatible server
// (VersityGW, MinIO): one object per key under an optional prefix, with
// conditional creates (If-None-Match), multipart uploads, bounded retries,
// and every SDK error translated to storage's sentinels at the boundary.
// It implements storage.Bucket and storage.FolderLister.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/redact"
	"github.com/benchfleet/benchfleet/storage"
)

// S3 backend defaults; Config documents each.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultMaxRetries   = 3
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = time.Second
	DefaultPartSize     = 16 << 20
	// MinPartSize is S3's smallest allowed part (all parts but the last).
	MinPartSize = 5 << 20
	maxParts    = 10000
	// OpenTimeout bounds the bucket check of NewBucket (at most
	// CallTimeout): a store that does not answer within it is taken as
	// unreachable, and the bucket is returned anyway.
	OpenTimeout = 10 * time.Second
)

// Config configures an Bucket. The zero value of every optional field
// means its default.
type Config struct {
	// Bucket is the bucket name. Required.
	Bucket string
	// Prefix is prepended to every key, e.g. "farm" stores results at
	// "farm/results/v1/...". Leading and trailing slashes are ignored.
	// Default "": keys are stored as given.
	Prefix string
	// Endpoint is the S3 API base URL, e.g. "http://127.0.0.1:7070".
	// Default "": the AWS endpoint of Region.
	Endpoint string
	// Region is the signing region. Default: the standard AWS chain
	// (AWS_REGION, shared config), else "us-east-1".
	Region string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET instead of
	// BUCKET.ENDPOINT. Most S3-compatible servers (VersityGW, MinIO) need
	// it. Default false.
	PathStyle bool
	// Create makes NewBucket create the bucket when it does not exist.
	// Default false: a missing bucket is an error naming it.
	Create bool
	// AccessKeyID, SecretAccessKey and SessionToken are static
	// credentials. Default "": the standard AWS chain (AWS_* variables,
	// shared files, SSO, instance roles). They are never logged.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// CallTimeout bounds each S3 request (a Put of a large object is bounded
	// per part) when the caller's ctx has no deadline. For Get it bounds the
	// time to the first byte; reading the body is bounded by the caller's
	// ctx only. Default DefaultCallTimeout (60s).
	CallTimeout time.Duration
	// MaxRetries is how often one HTTP request is retried after a
	// connection error, 429 or 5xx. Default DefaultMaxRetries (3);
	// negative means no retries. The SDK's own retryer is disabled so the
	// two never multiply.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between
	// retries (a server's Retry-After is capped at RetryWaitMax too).
	// Defaults DefaultRetryWaitMin (100ms) and DefaultRetryWaitMax (1s).
	RetryWaitMin time.Duration
	RetryWaitMax time.Duration
	// PartSize is the multipart threshold and part size: an object larger
	// than PartSize (or of unknown size that turns out larger) is uploaded
	// in parts of PartSize. Default DefaultPartSize (16 MiB); at least
	// MinPartSize (5 MiB).
	PartSize int64
	// Log receives the backend's logs (component=storage, backend=s3).
	// Default (the zero Logger): none.
	Log zerolog.Logger
}

func (c *Config) fill() error {
	if c.Bucket == "" {
		return fmt.Errorf("storage: s3: Bucket is required")
	}
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.Prefix != "" {
		if err := storage.CheckKey(c.Prefix); err != nil {
			return fmt.Errorf("storage: s3: Prefix: %w", err)
		}
		c.Prefix += "/"
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("storage: s3: Endpoint %q must be an http(s) URL", storage.Redact(c.Endpoint))
		}
		if u.User != nil {
			return fmt.Errorf("storage: s3: Endpoint %q must not carry credentials", storage.Redact(c.Endpoint))
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("storage: s3: AccessKeyID and SecretAccessKey must be set together")
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.CallTimeout < 0 {
		return fmt.Errorf("storage: s3: CallTimeout must be positive")
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	case c.MaxRetries > 10:
		return fmt.Errorf("storage: s3: MaxRetries must be at most 10 (got %d)", c.MaxRetries)
	}
	if c.RetryWaitMin <= 0 {
		c.RetryWaitMin = DefaultRetryWaitMin
	}
	if c.RetryWaitMax <= 0 {
		c.RetryWaitMax = DefaultRetryWaitMax
	}
	if c.RetryWaitMax < c.RetryWaitMin {
		return fmt.Errorf("storage: s3: RetryWaitMax (%s) is below RetryWaitMin (%s)", c.RetryWaitMax, c.RetryWaitMin)
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.PartSize < MinPartSize || c.PartSize > 1<<30 {
		return fmt.Errorf("storage: s3: PartSize must be between 5 MiB and 1 GiB (got %d)", c.PartSize)
	}
	return nil
}

// Bucket is the storage.Bucket on S3 or an S3-compatible server. Every key is
// stored under the configured prefix. All HTTP goes through a bounded
// retrying client; errors are translated to ErrNotFound, ErrExists and
// ErrUnavailable at this boundary and never expose SDK types or
// credentials.
//
// Write-once: Put with IfAbsent sends If-None-Match: * (on PutObject, or on
// CompleteMultipartUpload for large objects), which S3 and VersityGW
// (>= v1.8.0, atomically under a per-key lock) evaluate on the server. A
// request that is retried after the server committed it may therefore
// report ErrExists for the caller's own write; the object is then the
// caller's, which is what a write-once result needs.
type Bucket struct {
	client *s3.Client
	http   *http.Client
	cfg    Config
	bucket string
	prefix string
	log    zerolog.Logger
	counts *Requests
}

var (
	_ storage.Bucket       = (*Bucket)(nil)
	_ storage.FolderLister = (*Bucket)(nil)
)

// Requests returns how many HTTP requests the bucket has sent so far, by
// kind (take two and Sub them to count an operation's).
func (b *Bucket) Requests() RequestCounts { return b.counts.snapshot() }

// NewBucket connects to cfg.Bucket. It checks that the bucket exists
// (creating it when cfg.Create is set) and returns an error naming the
// bucket if it does not. If the server cannot be reached, it logs a warning
// and returns the bucket anyway, so a worker can start during an outage and
// spool its results; so can a server that does not answer within
// OpenTimeout. Missing credentials are an error matching
// ErrNoCredentials.
func NewBucket(ctx context.Context, cfg Config) (*Bucket, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	log := cfg.Log.With().Str("component", "storage").Str("backend", "s3").Str("bucket", cfg.Bucket).Logger()

	opts := []func(*config.LoadOptions) error{
		// The SDK's buildable client, so the loader can apply a custom CA
		// bundle (AWS_CA_BUNDLE); its transport is then wrapped below.
		config.WithHTTPClient(awshttp.NewBuildableClient()),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(logging.Nop{}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The loader's errors name files and profiles, not secrets.
		return nil, fmt.Errorf("storage: s3 bucket %q: load AWS configuration: %s", cfg.Bucket, err.Error())
	}
	awsCfg.Credentials = guardCredentials(awsCfg.Credentials)
	counts := &Requests{}
	hc := newS3HTTPClient(cfg, log, sdkTransport(awsCfg.HTTPClient), counts)
	awsCfg.HTTPClient = hc
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	cfg.Region = awsCfg.Region
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	b := &Bucket{client: client, http: hc, cfg: cfg, bucket: cfg.Bucket, prefix: cfg.Prefix, log: log, counts: counts}
	if err := b.ensureBucket(ctx); err != nil {
		hc.CloseIdleConnections()
		return nil, err
	}
	log.Debug().Str("endpoint", storage.Redact(cfg.Endpoint)).Str("region", cfg.Region).Str("prefix", cfg.Prefix).
		Int64("part_size", cfg.PartSize).Msg("s3 bucket opened")
	return b, nil
}

func (b *Bucket) ensureBucket(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, min(b.cfg.CallTimeout, OpenTimeout))
	_, err := b.client.HeadBucket(cctx, &s3.HeadBucketInput{Bucket: aws.String(b.bucket)})
	cancel()
	if err == nil {
		return nil
	}
	terr := b.translate(ctx, opOpenBucket, "", err)
	switch {
	case errors.Is(terr, ErrNoCredentials):
		return terr // nothing works without them: say so now
	case errors.Is(terr, errBucketMissing) && b.cfg.Create:
		return b.createBucket(ctx)
	case errors.Is(terr, errBucketMissing):
		return fmt.Errorf("storage: s3 bucket %q does not exist (create it, or add create=true to the store URL)", b.bucket)
	case errors.Is(terr, storage.ErrUnavailable):
		b.log.Warn().Err(terr).Msg("s3 store unreachable at open; continuing")
		return nil
	case ctx.Err() != nil:
		return terr
	default:
		// Access to HeadBucket may be denied to a write-only identity; the
		// first real call reports a real problem.
		b.log.Warn().Err(terr).Msg("cannot check the s3 bucket; continuing")
		return nil
	}
}

func (b *Bucket) createBucket(ctx context.Context) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(b.bucket)}
	if b.cfg.Region != "" && b.cfg.Region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(b.cfg.Region),
		}
	}
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	_, err := b.client.CreateBucket(cctx, in)
	if err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if errors.As(err, &owned) {
			return nil
		}
		return b.translate(ctx, "create bucket", "", err)
	}
	b.log.Info().Msg("s3 bucket created")
	return nil
}

// callCtx derives the ctx of one S3 call: the caller's deadline if it has
// one, else CallTimeout.
func (b *Bucket) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, b.cfg.CallTimeout)
}

func (b *Bucket) objectKey(key string) (string, error) {
	if err := storage.CheckKey(key); err != nil {
		return "", err
	}
	return b.prefix + key, nil
}

// Get implements Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	ok, err := b.objectKey(key)
	if err != nil {
		return nil, err
	}
	// The call timeout bounds the time to the response; once the body
	// streams, only the caller's ctx bounds it (the timer is stopped).
	cctx, cancel := context.WithCancel(ctx)
	var timer *time.Timer
	if _, has := ctx.Deadline(); !has {
		timer = time.AfterFunc(b.cfg.CallTimeout, cancel)
	}
	out, err := b.client.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(ok)})
	if timer != nil && !timer.Stop() && err == nil {
		out.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return nil, b.translate(ctx, "get", key, err)
	}
	return &s3Body{rc: out.Body, cancel: cancel, key: key}, nil
}

// s3Body releases the call's ctx on Close and translates read errors.
type s3Body struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	key    string
}

func (r *s3Body) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && err != io.EOF {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return n, fmt.Errorf("storage: s3 get %q: read: %w", r.key, err)
		}
		return n, fmt.Errorf("storage: s3 get %q: read: %w: %s", r.key, storage.ErrUnavailable, err.Error())
	}
	return n, err
}

func (r *s3Body) Close() error {
	err := r.rc.Close()
	r.cancel()
	return err
}

// Put implements Bucket. Objects up to PartSize go up in one PutObject;
// larger ones (or unknown-size ones that turn out larger) in parts, and a
// failed multipart upload is aborted.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, opts ...storage.PutOption) error {
	o := storage.ApplyPutOptions(opts)
	ok, err := b.objectKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: s3 put %q: %w", key, err)
	}
	var buf bytes.Buffer
	if o.Size >= 0 && o.Size <= b.cfg.PartSize {
		buf.Grow(int(o.Size))
	}
	// Read one byte past a part to learn whether one request suffices.
	n, err := buf.ReadFrom(io.LimitReader(storage.ContextReader(ctx, r), b.cfg.PartSize+1))
	if err != nil {
		return fmt.Errorf("storage: s3 put %q: read: %w", key, err)
	}
	if n <= b.cfg.PartSize {
		if o.Size >= 0 && n != o.Size {
			return fmt.Errorf("storage: s3 put %q: read %d bytes, but Size said %d", key, n, o.Size)
		}
		return b.putSingle(ctx, key, ok, buf.Bytes(), o)
	}
	return b.putMultipart(ctx, key, ok, io.MultiReader(&buf, storage.ContextReader(ctx, r)), o)
}

func (b *Bucket) putSingle(ctx context.Context, key, ok string, data []byte, o storage.PutOptions) error {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           aws.String(ok),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if o.ContentType != "" {
		in.ContentType = aws.String(o.ContentType)
	}
	if o.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	if _, err := b.client.PutObject(cctx, in); err != nil {
		terr := b.translate(ctx, "put", key, err)
		if o.IfAbsent && errors.Is(terr, storage.ErrUnavailable) && ctx.Err() == nil {
			// A server refusing a conditional put (412) before it read the
			// whole body may close the connection while the body is still
			// being sent: the client sees a reset, not the 412. The object
			// being there is the answer (see Bucket: it may be the
			// caller's own).
			if there, xerr := b.Exists(ctx, key); xerr == nil && there {
				return fmt.Errorf("storage: s3 put %q: %w", key, storage.ErrExists)
			}
		}
		return terr
	}
	return nil
}

// Exists implements Bucket.
func (b *Bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.Attributes(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// Attributes implements Bucket.
func (b *Bucket) Attributes(ctx context.Context, key string) (storage.Attributes, error) {
	ok, err := b.objectKey(key)
	if err != nil {
		return storage.Attributes{}, err
	}
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	out, err := b.client.HeadObject(cctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(ok)})
	if err != nil {
		return storage.Attributes{}, b.translate(ctx, "attributes", key, err)
	}
	a := storage.Attributes{Size: aws.ToInt64(out.ContentLength)}
	if out.LastModified != nil {
		a.LastModified = *out.LastModified
	}
	return a, nil
}

// Delete implements Bucket. Deleting a missing key succeeds (S3 semantics).
func (b *Bucket) Delete(ctx context.Context, key string) error {
	ok, err := b.objectKey(key)
	if err != nil {
		return err
	}
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	_, err = b.client.DeleteObject(cctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(ok)})
	if err != nil {
		terr := b.translate(ctx, "delete", key, err)
		if errors.Is(terr, storage.ErrNotFound) {
			return nil
		}
		return terr
	}
	return nil
}

// List implements Bucket. It pages through ListObjectsV2 (one bounded call
// per page), strips the bucket prefix, skips directory markers (keys
// ending in "/", which CheckKey never accepts), and reports an error if
// the server breaks the sorted order the contract promises.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if i := strings.LastIndex(prefix, "/"); i >= 0 {
			if err := storage.CheckKey(prefix[:i]); err != nil {
				yield("", fmt.Errorf("storage: s3 list %q: %w", prefix, err))
				return
			}
		}
		in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.prefix + prefix)}
		last := ""
		err := b.pages(ctx, prefix, in, func(out *s3.ListObjectsV2Output) bool {
			for _, obj := range out.Contents {
				k := strings.TrimPrefix(aws.ToString(obj.Key), b.prefix)
				if k == "" || strings.HasSuffix(k, "/") {
					continue
				}
				if k <= last {
					yield("", fmt.Errorf("storage: s3 list %q: server returned %q after %q (not sorted)", prefix, k, last))
					return false
				}
				last = k
				if !yield(k, nil) {
					return false
				}
			}
			return true
		})
		if err != nil { // only a failed request: a stopped page ends the listing with nil
			yield("", err)
		}
	}
}

// ListFolders implements storage.FolderLister: a listing with the delimiter "/",
// one request per 1,000 folders, however many keys they hold.
func (b *Bucket) ListFolders(ctx context.Context, prefix string) ([]string, error) {
	if err := storage.CheckKey(strings.TrimSuffix(prefix, "/")); err != nil {
		return nil, fmt.Errorf("storage: s3 list folders %q: %w", prefix, err)
	}
	full := b.prefix + prefix
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(full), Delimiter: aws.String("/")}
	var names []string
	err := b.pages(ctx, prefix, in, func(out *s3.ListObjectsV2Output) bool {
		for _, cp := range out.CommonPrefixes {
			n := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), full), "/")
			if n != "" && !strings.Contains(n, "/") {
				names = append(names, n)
			}
		}
		return true
	})
	return names, err
}

// pages sends the listing in and every continuation of it, calling page
// with each answer until page returns false or the listing ends.
func (b *Bucket) pages(ctx context.Context, prefix string, in *s3.ListObjectsV2Input, page func(*s3.ListObjectsV2Output) bool) error {
	for {
		cctx, cancel := b.callCtx(ctx)
		out, err := b.client.ListObjectsV2(cctx, in)
		cancel()
		if err != nil {
			return b.translate(ctx, "list", prefix, err)
		}
		if !page(out) || !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// Close implements Bucket: it closes idle connections.
func (b *Bucket) Close() error {
	b.http.CloseIdleConnections()
	return nil
}

// OpenURL opens the S3 store named by a URL:
//
//	s3://bucket[/prefix]?endpoint=URL&region=R&path_style=true&create=true&part_size=16MiB&timeout=60s
//
// Unknown parameters and credentials in the URL are errors: credentials
// come from the AWS chain only.
func OpenURL(ctx context.Context, u *url.URL, log zerolog.Logger) (storage.Bucket, error) {
	cfg, err := configFromURL(u)
	if err != nil {
		return nil, storage.BadURL(err)
	}
	check := cfg
	if err := check.fill(); err != nil { // a setting the URL gave is out of range
		return nil, storage.BadURL(err)
	}
	cfg.Log = log
	return NewBucket(ctx, cfg)
}

func configFromURL(u *url.URL) (Config, error) {
	red := storage.Redact(u.String())
	if u.User != nil {
		return Config{}, fmt.Errorf("storage: store URL %q: credentials in the URL are not supported; use the AWS_* variables or shared files", red)
	}
	if u.Host == "" {
		return Config{}, fmt.Errorf("storage: store URL %q: no bucket (want s3://bucket/prefix)", red)
	}
	cfg := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// u.Query would drop the bad pair silently (an endpoint lost).
		return Config{}, fmt.Errorf("storage: store URL %q: bad query (escape %% as %%25): %w", red, redact.Error(err, redact.Secrets(u.RawQuery)...))
	}
	for k, vs := range query {
		v := vs[len(vs)-1]
		bad := func(err error) error {
			return fmt.Errorf("storage: store URL %q: parameter %s: %w", red, k, err)
		}
		switch k {
		case "endpoint":
			cfg.Endpoint = v
		case "region":
			cfg.Region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, bad(err)
			}
			cfg.PathStyle = b
		case "create":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, bad(err)
			}
			cfg.Create = b
		case "part_size":
			n, err := parseByteSize(v)
			if err != nil {
				return Config{}, bad(err)
			}
			cfg.PartSize = n
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Config{}, bad(fmt.Errorf("want a positive duration such as 30s"))
			}
			cfg.CallTimeout = d
		default:
			return Config{}, fmt.Errorf("storage: store URL %q: unknown parameter %q (known: endpoint, region, path_style, create, part_size, timeout)", red, k)
		}
	}
	return cfg, nil
}

// parseByteSize parses "8388608", "8MiB", "512KiB" or "1GiB".
func parseByteSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size such as 16MiB")
	}
	return n * mult, nil
}

// As returns the S3 bucket behind b (through any Wrapper), e.g. to read
// its request counts.
func As(b storage.Bucket) (*Bucket, bool) { return storage.As[*Bucket](b) }
