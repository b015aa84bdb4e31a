package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command line parses, calls and prints: its code stays small (at most
// 3,300 lines outside tests, no file over 300 but root.go) and it does not
// speak JetStream itself (the libraries do; it passes their handles on).
func TestCLIStaysAFrontEnd(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		total += n
		if n > 300 && f != "root.go" {
			t.Errorf("%s has %d lines: a command's file holds at most 300 (move what is not parsing, calling or printing into a library)", f, n)
		}
		if bytes.Contains(b, []byte(`"github.com/nats-io/nats.go/jetstream"`)) {
			t.Errorf("%s imports nats.go/jetstream: JetStream belongs to producer, worker and internal/topology", f)
		}
	}
	if total > 3300 {
		t.Errorf("cmd/benchfleet/cli has %d lines outside tests, more than 3,300", total)
	}
	t.Logf("%d lines outside tests in %d files", total, len(files))
}
