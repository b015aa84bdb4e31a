package report

import (
	"bytes"
	"fmt"
	"os"

	"github.com/benchfleet/benchfleet/internal/atomicfile"
	"github.com/benchfleet/benchfleet/producer/gate"
)

// WriteJUnitFile writes r's JUnit report to path, replacing it through a
// temporary file in the same directory: a reader never sees half a
// report.
func WriteJUnitFile(path string, r *gate.RunReport) error {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

// AppendMarkdownFile appends r's Markdown summary to path (creating it),
// as GitHub expects of $GITHUB_STEP_SUMMARY.
func AppendMarkdownFile(path string, r *gate.RunReport) error {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(buf.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// WriteFiles writes a run's reports for CI: the JUnit report to junitPath
// (replacing it) and the Markdown summary appended to mdPath; an empty
// path is skipped. An error names the flag whose file failed (--junit,
// --summary-md).
func WriteFiles(r *gate.RunReport, junitPath, mdPath string) error {
	if junitPath != "" {
		if err := WriteJUnitFile(junitPath, r); err != nil {
			return fmt.Errorf("--junit %s: %w", junitPath, err)
		}
	}
	if mdPath != "" {
		if err := AppendMarkdownFile(mdPath, r); err != nil {
			return fmt.Errorf("--summary-md %s: %w", mdPath, err)
		}
	}
	return nil
}
