package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, ` [ ] `, `{"a":1,"b":[true,false,null,"x\u00e9\n"],"c":{"d":-0.5e+10}}`, `"\ud800"`, "\"\xff\xfe\"",
	`0`, `-0`, `01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`, `"\x"`, `"\u12"`,
	"\"a\tb\"", `tru`, `nulll`, `{"a":1}}`, ``, ` `, `"abc`, `[`, `{"a":`, `1 2`, "\x00",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func TestValidJSONSameAsStd(t *testing.T) {
	for _, c := range validCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.40q) = %v, encoding/json.Valid %v", c, got, want)
		}
	}
}

// FuzzValidJSON: validJSON decides every input as encoding/json.Valid does.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		if len(c) < 200 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid %v", data, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	doc := []byte(`{"schema":"benchfleet.result/v1","job":"j00024573","run":"20260301-001535","run_created_at":"2026-03-01T23:35:00.538Z","pool":"cpu","runner":"sim","status":"passed","attempt":1,"worker":{"id":"tt-lab-06","host":"tt-lab-06.farm","version":"v0.9.0"},"measurements":{"total_samples":512,"total_time_s":0.7705599999999999,"samples_per_sec":664.451827242525,"iteration_ms":{"min":5.418,"p50":6.02}},"labels":{"sim.duration":"10s","trigger":"nightly"}}`)
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			validJSON(doc)
		}
	})
	b.Run("std", func(b *testing.B) {
		for b.Loop() {
			json.Valid(doc)
		}
	})
}
