package worker

import (
	"sync"
	"time"
)

// phaseEventDelay is how long a phase must have run before its event is
// published. Phase events are progress for people watching (wait, the UI);
// a phase shorter than this is never seen there, and a farm of short jobs
// is spared four stored events per job. The result records every phase's
// duration either way, and the event keeps the time the phase began.
const phaseEventDelay = 100 * time.Millisecond

// phaseAnnouncer publishes a job's phase events, each once the phase has
// lasted phaseEventDelay; stop cancels the pending one, so no phase event
// follows the attempt's end (and its terminal event).
type phaseAnnouncer struct {
	publish func(phase string, began time.Time)
	delay   time.Duration

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func newPhaseAnnouncer(delay time.Duration, publish func(phase string, began time.Time)) *phaseAnnouncer {
	return &phaseAnnouncer{publish: publish, delay: delay}
}

// began records that phase started now; the previous phase's event, if not
// published yet, never will be.
func (p *phaseAnnouncer) began(phase string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(p.delay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopped || p.timer != t {
			return
		}
		p.timer = nil
		p.publish(phase, now)
	})
	p.timer = t
}

// stop ends the attempt's announcements: once it returns, none is published.
func (p *phaseAnnouncer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}
