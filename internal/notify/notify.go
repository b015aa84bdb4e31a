// Package notify sends benchfleet's notifications: a JSON POST to a
// webhook (Slack and Mattermost read its "text"; anything else can read
// the structured fields), deduplicated so the same news is sent once, and
// GitHub commit statuses for CI runs. HTTP goes through go-retryablehttp.
package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/rs/zerolog"

	"github.com/benchfleet/benchfleet/internal/escape"
	"github.com/benchfleet/benchfleet/protocol"
	"github.com/benchfleet/benchfleet/storage"
)

// Dedup remembers which notifications were sent. Claim reports true for
// the first caller of a key and false afterwards; Release forgets a key
// whose notification could not be sent, so a later call sends it.
type Dedup interface {
	Claim(ctx context.Context, key string, m protocol.Notification) (bool, error)
	Release(ctx context.Context, key string) error
}

// StoreDedup keeps one object per sent notification in the result store,
// under notify/v1/<sha256 of the key, 32 hex digits>.json, written with
// IfAbsent (a conditional create: of two racing senders one wins). The
// object is the message that was sent, with its key.
type StoreDedup struct{ Bucket storage.Bucket }

// DedupKey is the object key StoreDedup keeps for key.
func DedupKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "notify/v1/" + hex.EncodeToString(sum[:16]) + ".json"
}

// Claim implements Dedup.
func (d StoreDedup) Claim(ctx context.Context, key string, m protocol.Notification) (bool, error) {
	data, err := json.Marshal(struct {
		Key     string                `json:"key"`
		Message protocol.Notification `json:"message"`
	}{key, m})
	if err != nil {
		return false, err
	}
	err = d.Bucket.Put(ctx, DedupKey(key), bytes.NewReader(data), storage.IfAbsent(), storage.ContentType("application/json"))
	switch {
	case errors.Is(err, storage.ErrExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("notify: dedup record: %w", err)
	}
	return true, nil
}

// Release implements Dedup.
func (d StoreDedup) Release(ctx context.Context, key string) error {
	if err := d.Bucket.Delete(ctx, DedupKey(key)); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("notify: dedup record: %w", err)
	}
	return nil
}

// Config configures a Webhook.
type Config struct {
	// URL receives the POSTs (required; http or https).
	URL string
	// Dedup remembers what was sent (default: nothing is remembered, every
	// call sends).
	Dedup Dedup
	// Retries is how many times a failed POST (connection error, 429, 5xx)
	// is retried, with exponential backoff between RetryWaitMin and
	// RetryWaitMax (defaults 4, 500ms, 10s).
	Retries                    int
	RetryWaitMin, RetryWaitMax time.Duration
	// Timeout bounds one POST attempt (default 10s).
	Timeout time.Duration
	// RateLimit is how many notifications of one event (protocol.Notification.Event)
	// are sent per minute (default DefaultRateLimit; negative: no limit).
	// The rest are not sent; the next one of that event that is sent says
	// how many were held back (in Text and Held).
	RateLimit int
	// Now is the clock of the rate limit (default time.Now).
	Now func() time.Time
	// Log is the logger (default: disabled).
	Log zerolog.Logger
}

// Webhook posts notifications to one URL.
type Webhook struct {
	cfg    Config
	client *retryablehttp.Client
	log    zerolog.Logger
	limit  *rateLimiter
}

// NewWebhook validates cfg (the error names the field) and returns a
// Webhook.
func NewWebhook(cfg Config) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("notify: URL %q: want an http(s) URL", Redact(cfg.URL))
	}
	client, err := retryClient(&cfg.Retries, &cfg.RetryWaitMin, &cfg.RetryWaitMax, &cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	return &Webhook{cfg: cfg, client: client, log: cfg.Log.With().Str("component", "notify").Logger(),
		limit: newRateLimiter(cfg.RateLimit, cfg.Now)}, nil
}

// retryClient fills the retry settings both senders share (4 retries,
// waits from 500ms to 10s, a 10s timeout per request; negative retries is
// an error) and returns the client they configure.
func retryClient(retries *int, lo, hi, timeout *time.Duration) (*retryablehttp.Client, error) {
	if *retries < 0 {
		return nil, fmt.Errorf("notify: Retries %d: must not be negative", *retries)
	}
	if *retries == 0 {
		*retries = 4
	}
	if *lo <= 0 {
		*lo = 500 * time.Millisecond
	}
	if *hi <= 0 {
		*hi = 10 * time.Second
	}
	if *timeout <= 0 {
		*timeout = 10 * time.Second
	}
	return newClient(*retries, *lo, *hi, *timeout), nil
}

func newClient(retries int, lo, hi, timeout time.Duration) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = retries
	c.RetryWaitMin, c.RetryWaitMax = lo, hi
	c.HTTPClient.Timeout = timeout
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return c
}

// Notify posts m unless a notification with the same key was sent before
// (key "" never deduplicates; when the dedup record cannot be written the
// message is sent anyway; keys of different events should differ, e.g.
// "regression/<run>/..." and "quarantine/<worker>/..."). It reports whether it posted. A POST that
// fails after its retries releases the key, so the next call tries again.
// Text goes out through escape.Chat (job-provided text cannot ping a
// channel or hide a link), and at most Config.RateLimit messages of one
// event a minute are sent: one held back reports false and no error.
func (h *Webhook) Notify(ctx context.Context, key string, m protocol.Notification) (bool, error) {
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	if key != "" && h.cfg.Dedup != nil {
		first, err := h.cfg.Dedup.Claim(ctx, key, m)
		if err != nil {
			// A duplicate beats silence: the store may be down at the very
			// moment worth telling about.
			h.log.Warn().Err(err).Str("event", m.Event).Msg("dedup record not written; sending anyway")
			first = true
		}
		if !first {
			h.log.Debug().Str("event", m.Event).Str("run", m.Run).Msg("notification already sent; skipped")
			return false, nil
		}
	}
	ok, held := h.limit.allow(m.Event)
	if !ok {
		h.log.Info().Str("event", m.Event).Str("run", m.Run).Int("limit", h.cfg.RateLimit).Msg("notification held back by the rate limit")
		return false, nil
	}
	m.Text = escape.Chat(m.Text)
	if held > 0 {
		m.Held = held
		m.Text += heldNote(m.Event, held, h.cfg.RateLimit)
	}
	if err := postJSON(ctx, h.client, h.cfg.URL, nil, m); err != nil {
		if key != "" && h.cfg.Dedup != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if rerr := h.cfg.Dedup.Release(rctx, key); rerr != nil {
				h.log.Warn().Err(rerr).Msg("dedup record of an unsent notification not removed")
			}
			cancel()
		}
		return false, fmt.Errorf("notify %s: %w", Redact(h.cfg.URL), err)
	}
	return true, nil
}

// postJSON POSTs v as JSON with headers and wants a 2xx answer.
func postJSON(ctx context.Context, c *retryablehttp.Client, u string, headers http.Header, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, u, data)
	if err != nil {
		return err
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return scrub(err, u)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// scrub replaces the URL in an error (a webhook URL is a secret: Slack's
// carries its token in the path) with its redacted form.
func scrub(err error, u string) error {
	return errors.New(strings.ReplaceAll(err.Error(), u, Redact(u)))
}

// Redact keeps a URL's scheme and host: webhook paths and queries carry
// tokens.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<url>"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
