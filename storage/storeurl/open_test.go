package storeurl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/s3test"
	"github.com/benchfleet/benchfleet/storage"
	"github.com/benchfleet/benchfleet/storage/file"
	"github.com/benchfleet/benchfleet/storage/storeurl"
)

// No error of Open shows a credential, wherever the URL carries it: in the
// user info of the store URL or of its endpoint parameter, with a bad or
// unknown parameter beside it, or in a URL that does not parse.
func TestOpenErrorsNeverShowSecrets(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	const secret = "s3cr3tKEY"
	for _, u := range []string{
		"s3://bkt/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:1&path_style=maybe",
		"s3://bkt/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:1&bogus=1",
		"s3://bkt/p?endpoint=http://AKIA:" + secret + "@127.0.0.1:1",
		"s3://AKIA:" + secret + "@bkt/p?region=x",
		"s3://AKIA:" + secret + "%zz@bkt/p",
		"s3://AKIA:" + secret + "#x@bkt/p",
		"s3://bkt/p?endpoint=http://AKIA:" + secret + "%zz@127.0.0.1:1",
		"s3://bkt/p?secret_key=" + secret + "&bogus=1",
		"file://AKIA:" + secret + "@host/dir",
		"gs://AKIA:" + secret + "@bkt/p",
	} {
		b, err := storeurl.Open(t.Context(), u, zerolog.Nop())
		if err == nil {
			b.Close()
			t.Errorf("%s: opened", u)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
		if r := storage.Redact(u); strings.Contains(r, secret) {
			t.Errorf("Redact shows the secret: %s", r)
		}
	}
}

func TestOpenFileURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, u := range []string{dir, "file://" + dir} {
		b, err := storeurl.Open(t.Context(), u, zerolog.Nop())
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if fb, ok := b.(*file.Bucket); !ok || fb.Root() != dir {
			t.Fatalf("Open(%q) = %T %v", u, b, b)
		}
	}
}

func TestS3OpenURL(t *testing.T) {
	// Not parallel: SetEnv points the standard AWS chain at the server.
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := t.Context()
	log := zerolog.Nop()

	b, err := storeurl.Open(ctx, srv.URL("viaurl")+"&part_size=5MiB&timeout=5s", log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Put(ctx, "k", strings.NewReader("v"), storage.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("viaurl/k")}); err != nil {
		t.Fatalf("object not under the URL's prefix: %v", err)
	}

	// A missing bucket is an error naming it, unless create=true.
	missing := strings.Replace(srv.URL("p"), srv.Bucket, "nosuch-"+srv.Bucket, 1)
	if _, err := storeurl.Open(ctx, missing, log); err == nil || !strings.Contains(err.Error(), "does not exist") ||
		!strings.Contains(err.Error(), "create=true") {
		t.Fatalf("Open(missing bucket) error = %v", err)
	}
	created, err := storeurl.Open(ctx, missing+"&create=true", log)
	if err != nil {
		t.Fatalf("Open(create=true): %v", err)
	}
	defer created.Close()
	if err := created.Put(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	// Opening an existing bucket with create=true is fine too.
	again, err := storeurl.Open(ctx, missing+"&create=true", log)
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
		_, err := storeurl.Open(t.Context(), tc.url, zerolog.Nop())
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
