package worker

import (
	"sync"
	"testing"
	"time"
)

type phaseLog struct {
	mu   sync.Mutex
	seen []string
	at   []time.Time
}

func (l *phaseLog) publish(phase string, began time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, phase)
	l.at = append(l.at, began)
}

func (l *phaseLog) phases() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// Phases shorter than the delay are not announced; a phase that lasts is
// announced once, with the time it began; nothing is announced after stop.
func TestPhaseAnnouncer(t *testing.T) {
	t.Parallel()
	var l phaseLog
	p := newPhaseAnnouncer(30*time.Millisecond, l.publish)
	p.began("compile")
	p.began("warmup") // compile lasted no time: never announced
	began := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for len(l.phases()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := l.phases(); len(got) != 1 || got[0] != "warmup" {
		t.Fatalf("announced %v, want [warmup]", got)
	}
	if d := l.at[0].Sub(began); d > time.Millisecond || d < -time.Second {
		t.Errorf("warmup announced as begun at %v, %v from its start", l.at[0], d)
	}
	p.began("timing")
	p.stop()
	time.Sleep(60 * time.Millisecond) // twice the delay: the timer would have fired
	p.began("pcc")                    // after stop: ignored
	time.Sleep(60 * time.Millisecond)
	if got := l.phases(); len(got) != 1 {
		t.Fatalf("announced %v after stop, want only [warmup]", got)
	}
}
