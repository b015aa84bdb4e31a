package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchfleet/benchfleet/cmd/benchfleet/cli"
	"github.com/benchfleet/benchfleet/internal/fleettest"
	"github.com/benchfleet/benchfleet/internal/topology"
	"github.com/benchfleet/benchfleet/protocol"
)

// `dlq list --format json` prints exactly [{id, run, pool, priority,
// worker, reason, attempts, time, payload}] with payload the original
// message (a JSON value, or a string when it was not JSON) and run,
// priority and worker "" when unknown; `dlq retry` of an unknown id or of a job that is itself
// invalid is a usage error.
func TestDLQListShapeAndRetryErrors(t *testing.T) {
	t.Parallel()
	srv := fleettest.Server(t)
	_, js := fleettest.Connect(t, srv.ClientURL())
	fleettest.Topology(t, js, topology.Config{})
	now := time.Now().UTC().Truncate(time.Second)
	for _, dl := range []protocol.DeadLetter{
		{Schema: protocol.SchemaDead, ID: "seq-7", Pool: "sim", Reason: "invalid job: decode job: unexpected EOF", Attempts: 1, Time: now, Payload: []byte(`{"schema":`)},
		{Schema: protocol.SchemaDead, ID: "jbad", Run: "r1", Pool: "sim", Priority: protocol.PriorityHigh, Worker: "w7",
			Reason: "invalid job: benchmark.batch_size: must be a positive integer (got 0)", Attempts: 1, Time: now,
			Payload: []byte(`{"schema":"benchfleet.job/v1","id":"jbad","run":"r1"}`)},
	} {
		data, _ := json.Marshal(dl)
		m := nats.NewMsg(protocol.DeadSubject(dl.Pool))
		m.Data = data
		if _, err := js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		return cmdline.Output(t, append([]string{"--nats", srv.ClientURL(), "--log-format", "json"}, args...)...)
	}
	code, out, errOut := run("dlq", "list", "--format", "json")
	if code != 0 {
		t.Fatalf("dlq list: exit %d %s", code, errOut)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 2 {
		t.Fatalf("dlq list json: %v\n%s", err, out)
	}
	for _, e := range raw {
		if len(e) != 9 {
			t.Errorf("entry keys: %v", e)
		}
		for _, k := range []string{"id", "run", "pool", "priority", "worker", "reason", "attempts", "time", "payload"} {
			if _, ok := e[k]; !ok {
				t.Errorf("entry lacks %q", k)
			}
		}
	}
	for k, want := range map[string]string{"run": `"r1"`, "priority": `"high"`, "worker": `"w7"`} {
		if got := string(raw[1][k]); got != want {
			t.Errorf("dead letter jbad: %s is %s, want %s", k, got, want)
		}
	}
	if got := string(raw[0]["run"]); got != `""` {
		t.Errorf("a dead letter without a run shows run %s, want \"\"", got)
	}
	if string(raw[0]["payload"]) != `"{\"schema\":"` {
		t.Errorf("unparseable payload shown as %s, want the original as a string", raw[0]["payload"])
	}
	var p map[string]any
	if err := json.Unmarshal(raw[1]["payload"], &p); err != nil || p["id"] != "jbad" {
		t.Errorf("JSON payload shown as %s", raw[1]["payload"])
	}
	if code, out, _ := run("dlq", "list"); code != 0 || !strings.Contains(out, "batch_size") || !strings.Contains(out, "(2 dead letters)") {
		t.Errorf("dlq list table: exit %d\n%s", code, out)
	}
	if code, _, errOut := run("dlq", "retry", "nosuch"); code != cli.ExitUsage || !strings.Contains(errOut, "nosuch") {
		t.Errorf("retry unknown: exit %d %s", code, errOut)
	}
	if code, _, errOut := run("dlq", "retry", "jbad"); code != cli.ExitUsage || !strings.Contains(errOut, "invalid") {
		t.Errorf("retry invalid job: exit %d %s", code, errOut)
	}
}
