package storage

import (
	"context"
	"fmt"
	"io"
)

// A store killed in the middle of a write can leave a remnant: VersityGW's
// posix backend then refuses every conditional create of the key (412, as
// if it existed) while a read or HEAD of it finds nothing, and a delete
// does not clear it. Left so, the key's result or artifact could never be
// written: a spooled result would be retried forever and hold the spool's
// later entries behind it, and a result would be taken for delivered
// (ErrExists) with nothing stored. overRemnant tells a refusal with
// something there (it stands) from a remnant (written over).

// overRemnant writes the bytes open returns over key, whose conditional
// create was refused while nothing can be read there (the caller found it
// so), with opts (without IfAbsent), and reads them back: nil when key then
// holds content whose sha256 is sum, else ErrExists (another writer's
// bytes landed instead).
func overRemnant(ctx context.Context, b Bucket, key, sum string, open func() (io.ReadCloser, error), opts ...PutOption) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := b.Put(ctx, key, rc, opts...); err != nil {
		return fmt.Errorf("storage: write over what an interrupted write left at %s: %w", key, err)
	}
	same, err := sameContent(ctx, b, key, sum)
	if err != nil {
		return fmt.Errorf("storage: %s: %w", key, err)
	}
	if !same {
		return fmt.Errorf("storage: %s: %w", key, ErrExists)
	}
	return nil
}
