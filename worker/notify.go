package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/benchfleet/benchfleet/protocol"
)

// Notifier sends a notification once per key (the worker's webhook
// implements it). sent is false when the key was sent before.
type Notifier interface {
	Notify(ctx context.Context, key string, m protocol.Notification) (sent bool, err error)
}

// notifyTimeout bounds one notification, retries included.
const notifyTimeout = 2 * time.Minute

// notify sends m in the background (a slot never waits for a webhook).
func (w *Worker) notify(key string, m protocol.Notification) {
	n := w.cfg.Notifier
	if n == nil {
		return
	}
	m.Worker = w.cfg.ID
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if _, err := n.Notify(ctx, key, m); err != nil {
			w.log.Warn().Err(err).Str("event", m.Event).Msg("notification not sent")
		}
	}()
}

// notifyQuarantine tells that s left service. The key holds the worker,
// the device, the reason and the UTC day: the same quarantine is told once
// a day.
func (s *slot) notifyQuarantine(reason error) {
	w := s.w
	m := protocol.Notification{Event: protocol.NotifyQuarantine, Device: s.dev.ID, Pool: s.dev.Pool, Reason: reason.Error(),
		Text: fmt.Sprintf("benchfleet: device %s (%s) on worker %s was taken out of service: %v", s.dev.ID, s.dev.Pool, w.cfg.ID, reason)}
	w.notify(fmt.Sprintf("quarantine/%s/%s/%s/%s", w.cfg.ID, s.dev.ID, time.Now().UTC().Format(time.DateOnly), reason), m)
}

// notifyDead tells that a job was dead-lettered; the key is the dead
// letter's message id (job and attempt).
func (w *Worker) notifyDead(dl protocol.DeadLetter, job *protocol.Job) {
	m := protocol.Notification{Event: protocol.NotifyDeadLetter, Run: dl.Run, Job: dl.ID, Pool: dl.Pool, Reason: dl.Reason,
		Text: fmt.Sprintf("benchfleet: job %s of run %s (%s) was dead-lettered after %d attempt(s): %s — `benchfleet dlq retry %s` re-queues it",
			dl.ID, dl.Run, dl.Pool, dl.Attempts, dl.Reason, dl.ID)}
	if job != nil {
		m.Repo, m.Commit, m.Branch, m.Link = job.Source.Repo, job.Source.Commit, job.Source.Branch, job.Source.CIRunURL
	}
	w.notify(fmt.Sprintf("dead/%s/%d", dl.ID, dl.Attempts), m)
}
