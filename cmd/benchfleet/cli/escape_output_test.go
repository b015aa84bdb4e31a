package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/report"
	"github.com/benchfleet/benchfleet/protocol"
)

// A quarantine reason a job provoked reaches `fleet status` without its
// terminal escapes or line breaks.
func TestFleetTableEscapesReasons(t *testing.T) {
	t.Parallel()
	sts := []protocol.WorkerStatus{{ID: "w1", Time: time.Now(), Devices: []protocol.DeviceStatus{
		{ID: "d1", Pool: "cpu", State: protocol.DeviceQuarantined, Reason: "hung\x1b[2J\nFAKE ROW\tx"},
	}}}
	var buf bytes.Buffer
	report.WriteFleet(&buf, sts)
	out := buf.String()
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\nFAKE ROW") {
		t.Errorf("fleet table passes the reason as is:\n%q", out)
	}
}
