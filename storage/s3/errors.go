package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/benchfleet/benchfleet/storage"
)

// errBucketMissing marks a missing bucket. It is not ErrNotFound: a missing
// bucket is a configuration problem, and Exists must not answer false.
var errBucketMissing = errors.New("bucket does not exist")

// opOpenBucket is the operation name of the bucket check in NewBucket: a
// 404 there (HeadBucket has no error body) means the bucket is missing.
const opOpenBucket = "open bucket"

// translate turns an SDK error into a storage error at the boundary. The
// result wraps one of our sentinels (or the caller's ctx error) and carries
// the SDK's message as text only, so errors.As never finds an AWS type.
// Messages name the operation, the key and the HTTP status; they never
// carry credentials (requests are signed in headers, not URLs).
func (b *Bucket) translate(ctx context.Context, op, key string, err error) error {
	what := fmt.Sprintf("storage: s3 %s", op)
	if key != "" {
		what = fmt.Sprintf("storage: s3 %s %q", op, key)
	} else {
		what = fmt.Sprintf("%s (bucket %q)", what, b.bucket)
	}
	if cerr := ctx.Err(); cerr != nil {
		// The caller gave up: report that, not an outage.
		return fmt.Errorf("%s: %w", what, cerr)
	}
	if errors.Is(err, errNoCreds) {
		b.log.Debug().Err(err).Msg("s3 credentials")
		return fmt.Errorf("%s: %w", what, ErrNoCredentials)
	}
	status, code, msg := describeS3Error(err)
	switch {
	case code == "NoSuchBucket" || (status == 404 && op == opOpenBucket):
		return fmt.Errorf("%s: %w: %q", what, errBucketMissing, b.bucket)
	case code == "NoSuchKey" || code == "NotFound" || status == 404:
		return fmt.Errorf("%s: %w", what, storage.ErrNotFound)
	case code == "PreconditionFailed" || status == 412:
		return fmt.Errorf("%s: %w", what, storage.ErrExists)
	case status == 429 || status >= 500 || code == "SlowDown" || code == "RequestTimeout":
		return fmt.Errorf("%s: %w: %s", what, storage.ErrUnavailable, msg)
	case status != 0:
		return fmt.Errorf("%s: %s", what, msg)
	case isTransportError(err):
		var oe *net.OpError
		if errors.As(err, &oe) {
			msg = "cannot reach the server: " + oe.Error() // not the SDK's retry dump
		}
		return fmt.Errorf("%s: %w: %s", what, storage.ErrUnavailable, msg)
	default:
		return fmt.Errorf("%s: %s", what, msg)
	}
}

// describeS3Error extracts the HTTP status, the S3 error code and a short
// message from an SDK error.
func describeS3Error(err error) (status int, code, msg string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
		m := ae.ErrorMessage()
		if m == "" {
			m = strings.ToLower(code)
		}
		if status != 0 {
			return status, code, fmt.Sprintf("HTTP %d %s: %s", status, code, m)
		}
		return status, code, fmt.Sprintf("%s: %s", code, m)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status, "", "timed out (no response within the call timeout)"
	}
	if status != 0 {
		return status, "", fmt.Sprintf("HTTP %d", status)
	}
	// The SDK's text: "operation error S3: PutObject, <cause>". It names
	// the URL (bucket and key, no signature) and the network error.
	return 0, "", err.Error()
}

// isTransportError reports errors of the network, not of the request: the
// server could not be reached, the connection broke, or the call timed out.
// translate has already ruled out the caller's cancellation, so a
// context.Canceled here is the call timeout of Get firing.
func isTransportError(err error) bool {
	var se *smithyhttp.RequestSendError
	var ne net.Error
	return errors.As(err, &se) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
