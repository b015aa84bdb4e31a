package protocol_test

import (
	"testing"

	"github.com/benchfleet/benchfleet/protocol"
)

// A key encoding/json matches to a field case-insensitively is read as it
// reads it: the fast decoder would skip it.
func TestDecodeResultFoldsKeysAsEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{"schema":"benchfleet.result/v1","job":"j","run":"r","LABELS":{"a":"b"}}`,
		`{"schema":"benchfleet.result/v1","job":"j","run":"r","\u006cabels":{"a":"b"}}`,
		`{"schema":"benchfleet.result/v1","job":"j","run":"r","Labels" :{"a":"b"}}`,
	} {
		r, err := protocol.DecodeResult([]byte(doc))
		if err != nil || r.Labels["a"] != "b" {
			t.Errorf("%s: labels %v, %v; want a=b", doc, r.Labels, err)
		}
	}
	if _, err := protocol.DecodeResult([]byte(`{"schema":"benchfleet.result/v1","job":"j","run":"r","lABeLs":[]}`)); err == nil {
		t.Error(`"lABeLs":[] accepted; encoding/json rejects an array for the labels`)
	}
}
