package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/benchfleet/benchfleet/producer/gate"
)

// An open regression shared by two jobs of a run is told once in the gate
// table, the Markdown summary and the notification, with the bisect
// command when commits between the last good and the first bad one were
// not measured; an accepted one says who accepted it and why.
func TestOpenRegressionsAreToldOnce(t *testing.T) {
	t.Parallel()
	rep := sampleReport(t)
	s := gate.Series{Model: "resnet50", Pool: "n150", BatchSize: 8, DataFormat: "bfloat16", Runner: "forge"}
	open := gate.OpenRegression{Series: s, Name: s.Name(), Since: strings.Repeat("9f", 20), SinceRun: "ci-fleet-9f9f", At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		LastGood: strings.Repeat("1a", 20), Before: 1000, Level: 700, Now: 700, Change: -0.3, Runs: 3,
		Bisect: gate.BisectCommand(s, strings.Repeat("1a", 20), strings.Repeat("9f", 20))}
	accepted := open
	accepted.Since, accepted.Accepted = strings.Repeat("77", 20), &gate.Acceptance{By: "alice", Reason: "more accurate, slower", At: open.At}
	for _, i := range []int{0, 3} { // two jobs of one series share them
		rep.Verdicts[i].OpenRegressions = []gate.OpenRegression{open, accepted}
	}
	var table, md bytes.Buffer
	if err := WriteGateTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	_, notice, ok := GateNotice(rep)
	if !ok {
		t.Fatal("no notification for a failed run")
	}
	for name, text := range map[string]string{"table": table.String(), "markdown": md.String(), "notification": notice.Text} {
		if n := strings.Count(text, "open regression since 9f9f9f9f9f9f"); n != 1 {
			t.Errorf("%s tells the open regression %d times, want once:\n%s", name, n, text)
		}
		if !strings.Contains(text, "accepted regression since 777777777777") || !strings.Contains(text, `accepted by alice on 2026-12-01: "more accurate, slower"`) {
			t.Errorf("%s does not list the accepted regression with who and why:\n%s", name, text)
		}
	}
	for name, text := range map[string]string{"table": table.String(), "markdown": md.String()} {
		if !strings.Contains(text, "--good "+strings.Repeat("1a", 20)+" --bad "+strings.Repeat("9f", 20)) || strings.Count(text, "results bisect") != 1 {
			t.Errorf("%s: want the bisect command once, for the open one:\n%s", name, text)
		}
	}
	if len(notice.OpenRegressions) != 2 {
		t.Errorf("notification open_regressions %q, want two lines", notice.OpenRegressions)
	}
}
