package s3

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ErrNoCredentials is matched (errors.Is) by S3 errors caused by missing or
// unusable AWS credentials. Its text says how to give them, instead of the
// SDK's dump of every provider of its chain.
var ErrNoCredentials = errors.New("no usable AWS credentials for the s3 store: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY " +
	"(plus AWS_SESSION_TOKEN for temporary keys), or AWS_PROFILE naming a profile in ~/.aws/credentials, " +
	"or run where an instance or pod role provides them")

// credsGuard marks a failure to get credentials with errNoCreds, so
// translate can tell it from a failure of the request.
type credsGuard struct{ inner aws.CredentialsProvider }

var errNoCreds = errors.New("get credentials")

func (g credsGuard) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := g.inner.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return c, fmt.Errorf("%w: %w", errNoCreds, err)
	}
	return c, err
}

// guardCredentials wraps the configured provider (nil: anonymous, left alone).
func guardCredentials(p aws.CredentialsProvider) aws.CredentialsProvider {
	if p == nil {
		return nil
	}
	return aws.NewCredentialsCache(credsGuard{inner: p})
}
