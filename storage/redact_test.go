package storage_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/storage"
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
		b, err := storage.Open(t.Context(), u, zerolog.Nop())
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
