package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.xml")
	for _, data := range []string{"first", "second"} {
		if err := atomicfile.WriteFile(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "missing", "x"), []byte("x")); err == nil {
		t.Error("write into a missing directory: nil error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the report (no temporary file left)", len(entries))
	}
}
