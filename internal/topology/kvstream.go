package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvStreamConfig is the backing stream KV_<bucket> of a bucket as nats.go's
// CreateKeyValue makes it (same subjects, history, discard and direct get,
// so nats.go binds it as a bucket), except that it refuses roll-ups and
// purges: a `Nats-Rollup` header on a put (`all` wipes every key, `sub` a
// key's history) and $JS.API.STREAM.PURGE are rejected by the server, so a
// client that may write one key cannot erase the others. benchfleet never
// purges a key (KeyValue.Purge is a roll-up); deletes are tombstones, which
// need neither. DenyPurge cannot be turned off again once set.
func kvStreamConfig(cfg jetstream.KeyValueConfig) jetstream.StreamConfig {
	history := int64(1)
	if cfg.History > 0 {
		history = int64(cfg.History)
	}
	replicas := cfg.Replicas
	if replicas <= 0 {
		replicas = 1
	}
	maxBytes := cfg.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1
	}
	maxMsgSize := cfg.MaxValueSize
	if maxMsgSize == 0 {
		maxMsgSize = -1
	}
	dup := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < dup {
		dup = cfg.TTL
	}
	return jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: history,
		MaxBytes:          maxBytes,
		MaxAge:            cfg.TTL,
		MaxMsgSize:        maxMsgSize,
		Storage:           cfg.Storage,
		Replicas:          replicas,
		AllowRollup:       false,
		DenyDelete:        true,
		DenyPurge:         true,
		Duplicates:        dup,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		AllowDirect:       true,
		Discard:           jetstream.DiscardNew,
	}
}

// ensureKV opens bucket cfg.Bucket. With update (Apply) it creates or
// updates the backing stream to kvStreamConfig (roll-ups and purges off);
// without (Ensure) it creates a missing one so and uses an existing one
// as it is, warning when it still allows roll-ups or purges (run
// `benchfleet topology apply` to close that).
func (r *retrier) ensureKV(ctx context.Context, js jetstream.JetStream, update bool, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	scfg := kvStreamConfig(cfg)
	var kv jetstream.KeyValue
	var live jetstream.StreamConfig
	err := r.do(ctx, "bucket "+cfg.Bucket, func(ctx context.Context) error {
		var s jetstream.Stream
		var err error
		if update {
			s, err = js.CreateOrUpdateStream(ctx, scfg)
		} else {
			s, err = js.Stream(ctx, scfg.Name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				s, err = js.CreateStream(ctx, scfg)
				if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
					s, err = js.Stream(ctx, scfg.Name)
				}
			}
		}
		if err != nil {
			return err
		}
		live = s.CachedInfo().Config
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("topology: bucket %s: %w", cfg.Bucket, err)
	}
	if RollupAllowed(live) {
		r.c.Log.Warn().Str("component", "topology").Str("object", "bucket "+cfg.Bucket).
			Msg("the bucket allows roll-ups or purges: one message with a Nats-Rollup header can erase every key; run `benchfleet topology apply` as admin to close it")
	}
	return kv, nil
}

// RollupAllowed reports whether a stream's settings let a publisher erase
// other messages (AllowRollup) or a client purge it (no DenyPurge).
func RollupAllowed(c jetstream.StreamConfig) bool { return c.AllowRollup || !c.DenyPurge }
