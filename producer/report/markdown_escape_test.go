package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/benchfleet/benchfleet/producer/gate"
	"github.com/benchfleet/benchfleet/producer/runstate"
	"github.com/benchfleet/benchfleet/protocol"
)

// A job's reason reaches the step summary as text: no link, image, HTML,
// emphasis, mention or terminal escape gets through, whether it failed or
// never finished.
func TestWriteMarkdownEscapesReasons(t *testing.T) {
	t.Parallel()
	evil := "oops [click here](https://evil.example/x) ![i](https://evil.example/i.png) <img src=x onerror=alert(1)> **big** @org/team \x1b[31mred"
	r := &gate.RunReport{
		Manifest: &protocol.RunManifest{Run: "md-escape"},
		Rows: []runstate.Row{
			{Job: "ja", Model: "m", Pool: "sim", BatchSize: 1, DataFormat: "bfloat16", Status: protocol.StatusFailed, Reason: evil},
			{Job: "jb", Model: "m", Pool: "sim", BatchSize: 2, DataFormat: "bfloat16", Reason: evil},
		},
		Warnings: []string{"board said " + evil},
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, bad := range []string{"[click here](", "![i](", "<img", "**big**", "https://evil", "@org", "\x1b"} {
		if strings.Contains(md, bad) {
			t.Errorf("summary passes %q:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, `\[click here\]`) {
		t.Errorf("reason not shown escaped:\n%s", md)
	}
}
