package producer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// appendQueuedEvent writes what json.Marshal writes for the same event.
func TestQueuedEventJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 2, 3, 4500, time.UTC)
	for _, j := range []*protocol.Job{
		{ID: "j0123456789abcdef", Run: "run-1", Pool: "sim", Priority: protocol.PriorityNormal},
		{ID: "j1", Run: "r", Pool: "n150", Priority: protocol.PriorityHigh},
		{ID: "j2", Run: "r", Pool: "", Priority: ""},
		{ID: "j<3>&", Run: "r\"un\\ü\n", Pool: "p\x01", Priority: "low"},
	} {
		want, err := json.Marshal(protocol.Event{Schema: protocol.SchemaEvent, Run: j.Run, Job: j.ID, Time: at,
			Kind: protocol.EventQueued, Pool: j.Pool, Message: string(j.Priority)})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendQueuedEvent(nil, j, at); string(got) != string(want) {
			t.Errorf("job %q:\n got %s\nwant %s", j.ID, got, want)
		}
	}
}
