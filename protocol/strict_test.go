package protocol_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// DecodeJob is strict as docs/SCHEMA.md promises: exactly one object (nothing
// after it, not even a stray } or ]), keys as spelled in the schema (no
// case folding), no key twice, no control characters in label values.
func TestDecodeJobStrict(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(validJob())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.DecodeJob(good); err != nil {
		t.Fatalf("the valid job: %v", err)
	}
	body := strings.TrimSuffix(string(good), "}")
	rename := func(from, to string) string { return strings.Replace(string(good), `"`+from+`":`, `"`+to+`":`, 1) }
	cases := []struct{ name, doc, want string }{
		{"trailing brace", string(good) + "}", "trailing"},
		{"trailing bracket", string(good) + "]", "trailing"},
		{"trailing object", string(good) + "{}", "trailing"},
		{"trailing garbage after space", string(good) + " x", "trailing"},
		{"upper-case key", rename("pool", "POOL"), `"POOL"`},
		{"mixed-case nested key", rename("batch_size", "Batch_Size"), `"Batch_Size"`},
		{"duplicate key", body + `,"pool":"sim"}`, `duplicate key "pool"`},
		{"duplicate nested key", strings.Replace(string(good), `"model":"resnet50"`, `"model":"resnet50","model":"mlp"`, 1), `duplicate key "model"`},
		{"duplicate label", strings.Replace(string(good), `"team":"compiler"`, `"team":"compiler","team":"infra"`, 1), `duplicate key "team"`},
		{"tab in label", strings.Replace(string(good), `"team":"compiler"`, `"team":"comp\tiler"`, 1), "labels.team"},
		{"escape in label", strings.Replace(string(good), `"team":"compiler"`, `"team":"\u001b[31mred"`, 1), "labels.team"},
		{"DEL in label", strings.Replace(string(good), `"team":"compiler"`, `"team":"a\u007fb"`, 1), "labels.team"},
		{"C1 control in label", strings.Replace(string(good), `"team":"compiler"`, `"team":"a\u0085b"`, 1), "labels.team"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := protocol.DecodeJob([]byte(c.doc))
			if err == nil {
				t.Fatalf("accepted: %s", c.doc)
			}
			if !errors.Is(err, protocol.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

// BenchmarkDecodeJob is the worker's decode of every job it claims.
func BenchmarkDecodeJob(b *testing.B) {
	data, err := json.Marshal(validJob())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.DecodeJob(data); err != nil {
			b.Fatal(err)
		}
	}
}
