package protocol

import (
	"testing"
	"time"
)

func TestEventSpooledAndWorkerLive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Kind: EventPassed, Message: SpooledNote}, true},
		{Event{Kind: EventFailed, Message: "pcc 0.5 below 0.99 " + SpooledNote}, true},
		{Event{Kind: EventPassed}, false},
		{Event{Kind: EventPassed, ResultSpooled: true}, true},
		{Event{Kind: EventPhase, ResultSpooled: true}, false},
		{Event{Kind: EventPhase, Message: SpooledNote}, false}, // not an end
	} {
		if got := c.e.Spooled(); got != c.want {
			t.Errorf("%+v.Spooled() = %v, want %v", c.e, got, c.want)
		}
	}
	now := time.Now()
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{now, true},
		{now.Add(-WorkerStaleAfter + time.Second), true},
		{now.Add(-WorkerStaleAfter - time.Second), false},
		{time.Time{}, false},
	} {
		st := WorkerStatus{Time: c.at}
		if got := st.Live(now); got != c.want {
			t.Errorf("heartbeat at %v: Live = %v, want %v", c.at, got, c.want)
		}
	}
}
