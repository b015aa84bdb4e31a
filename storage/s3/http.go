package s3

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/rs/zerolog"
)

// newS3HTTPClient is the HTTP client of the S3 backend: go-retryablehttp
// with a bounded policy. It retries connection errors, 429 and 5xx (not
// 501) up to cfg.MaxRetries times with exponential backoff between
// cfg.RetryWaitMin and cfg.RetryWaitMax (a Retry-After header is capped at
// the maximum too). After the last retry it hands the server's response to
// the SDK, so an S3 error body (e.g. 503 SlowDown) is still parsed there.
//
// Every request sent (retries included) is counted in counts.
func newS3HTTPClient(cfg Config, log zerolog.Logger, tr *http.Transport, counts *Requests) *http.Client {
	inner := &http.Client{Transport: countingTransport{tr, counts}}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = inner
	rc.Logger = nil
	rc.RetryMax = cfg.MaxRetries
	rc.RetryWaitMin = cfg.RetryWaitMin
	rc.RetryWaitMax = cfg.RetryWaitMax
	rc.CheckRetry = retryablehttp.DefaultRetryPolicy
	rc.Backoff = func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		return min(retryablehttp.DefaultBackoff(lo, hi, attempt, resp), hi)
	}
	rc.ErrorHandler = func(resp *http.Response, err error, attempts int) (*http.Response, error) {
		if resp != nil {
			return resp, nil // let the SDK read the S3 error
		}
		if err == nil {
			err = fmt.Errorf("no response")
		}
		return nil, fmt.Errorf("after %d attempt(s): %w", attempts, err)
	}
	rc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, retry int) {
		if retry > 0 {
			// Method, host and path only: no query, no headers.
			log.Debug().Str("method", req.Method).Str("host", req.URL.Host).Str("path", req.URL.Path).
				Int("retry", retry).Msg("retrying s3 request")
		}
	}
	return rc.StandardClient()
}

// sdkTransport returns the transport of the SDK's default client as the
// config loader left it (proxy settings, TLS 1.2, a custom CA bundle), with
// a shorter connect timeout. It falls back to a pooled default transport.
func sdkTransport(c any) *http.Transport {
	bc, ok := c.(*awshttp.BuildableClient)
	if !ok {
		return cleanhttp.DefaultPooledTransport()
	}
	tr := bc.GetTransport()
	d := bc.GetDialer()
	d.Timeout = 10 * time.Second
	tr.DialContext = d.DialContext
	tr.MaxIdleConnsPerHost = 32
	return tr
}

// Requests counts the HTTP requests an S3 bucket sent, by kind (retries
// included): what a query or a compaction costs on a metered store.
type Requests struct {
	List, Get, Head, Put, Delete, Other atomic.Int64
}

// RequestCounts is a snapshot of Requests.
type RequestCounts struct {
	List, Get, Head, Put, Delete, Other int64
}

// Total is the number of requests of every kind.
func (c RequestCounts) Total() int64 { return c.List + c.Get + c.Head + c.Put + c.Delete + c.Other }

// Sub is c minus an earlier snapshot.
func (c RequestCounts) Sub(o RequestCounts) RequestCounts {
	return RequestCounts{c.List - o.List, c.Get - o.Get, c.Head - o.Head, c.Put - o.Put, c.Delete - o.Delete, c.Other - o.Other}
}

func (c RequestCounts) String() string {
	return fmt.Sprintf("%d requests (%d list, %d get, %d head, %d put, %d delete, %d other)",
		c.Total(), c.List, c.Get, c.Head, c.Put, c.Delete, c.Other)
}

func (r *Requests) snapshot() RequestCounts {
	return RequestCounts{r.List.Load(), r.Get.Load(), r.Head.Load(), r.Put.Load(), r.Delete.Load(), r.Other.Load()}
}

// countingTransport counts each request by its S3 operation kind.
type countingTransport struct {
	next   http.RoundTripper
	counts *Requests
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.counts
	switch {
	case req.Method == http.MethodGet && req.URL.Query().Has("list-type"):
		c.List.Add(1)
	case req.Method == http.MethodGet:
		c.Get.Add(1)
	case req.Method == http.MethodHead:
		c.Head.Add(1)
	case req.Method == http.MethodPut || req.Method == http.MethodPost:
		c.Put.Add(1)
	case req.Method == http.MethodDelete:
		c.Delete.Add(1)
	default:
		c.Other.Add(1)
	}
	return t.next.RoundTrip(req)
}
