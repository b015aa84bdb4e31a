package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/benchfleet/benchfleet/storage"
)

// putMultipart uploads r in parts of PartSize, one at a time (one part
// buffer in memory), with a CRC32 checksum per part. With IfAbsent it
// checks first (so a large upload that would lose is not sent) and makes
// the completion conditional (If-None-Match: *), which is the atomic step.
// On any failure the upload is aborted, also when ctx was cancelled.
func (b *Bucket) putMultipart(ctx context.Context, key, ok string, r io.Reader, o storage.PutOptions) (err error) {
	if o.IfAbsent {
		exists, err := b.Exists(ctx, key)
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("storage: s3 put %q: %w", key, storage.ErrExists)
		}
	}
	create := &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(b.bucket),
		Key:               aws.String(ok),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	}
	if o.ContentType != "" {
		create.ContentType = aws.String(o.ContentType)
	}
	cctx, cancel := b.callCtx(ctx)
	up, err := b.client.CreateMultipartUpload(cctx, create)
	cancel()
	if err != nil {
		return b.translate(ctx, "put (create multipart upload)", key, err)
	}
	uploadID := up.UploadId
	defer func() {
		if err != nil {
			b.abortMultipart(ctx, key, ok, uploadID)
		}
	}()

	part := make([]byte, b.cfg.PartSize)
	var parts []types.CompletedPart
	var total int64
	for num := int32(1); ; num++ {
		n, rerr := io.ReadFull(r, part)
		if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
			return fmt.Errorf("storage: s3 put %q: read: %w", key, rerr)
		}
		if n == 0 && num > 1 {
			break
		}
		if num > maxParts {
			return fmt.Errorf("storage: s3 put %q: more than %d parts of %d bytes", key, maxParts, b.cfg.PartSize)
		}
		total += int64(n)
		cctx, cancel := b.callCtx(ctx)
		out, err := b.client.UploadPart(cctx, &s3.UploadPartInput{
			Bucket:            aws.String(b.bucket),
			Key:               aws.String(ok),
			UploadId:          uploadID,
			PartNumber:        aws.Int32(num),
			Body:              bytes.NewReader(part[:n]),
			ContentLength:     aws.Int64(int64(n)),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		cancel()
		if err != nil {
			return b.translate(ctx, fmt.Sprintf("put (part %d)", num), key, err)
		}
		parts = append(parts, types.CompletedPart{
			ETag:          out.ETag,
			PartNumber:    aws.Int32(num),
			ChecksumCRC32: out.ChecksumCRC32,
		})
		if n < len(part) {
			break
		}
	}
	if o.Size >= 0 && total != o.Size {
		return fmt.Errorf("storage: s3 put %q: read %d bytes, but Size said %d", key, total, o.Size)
	}
	complete := &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(b.bucket),
		Key:             aws.String(ok),
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if o.IfAbsent {
		complete.IfNoneMatch = aws.String("*")
	}
	cctx, cancel = b.callCtx(ctx)
	defer cancel()
	if _, err := b.client.CompleteMultipartUpload(cctx, complete); err != nil {
		return b.translate(ctx, "put (complete multipart upload)", key, err)
	}
	b.log.Debug().Str("key", key).Int("parts", len(parts)).Int64("size", total).Msg("multipart upload complete")
	return nil
}

// abortMultipart aborts an upload so its parts do not linger. It runs on a
// ctx detached from the caller's cancellation, bounded by the call timeout.
func (b *Bucket) abortMultipart(ctx context.Context, key, ok string, uploadID *string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.cfg.CallTimeout, 30*time.Second))
	defer cancel()
	_, err := b.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(b.bucket), Key: aws.String(ok), UploadId: uploadID,
	})
	if err != nil {
		b.log.Warn().Str("key", key).Err(b.translate(actx, "abort multipart upload", key, err)).
			Msg("could not abort a failed multipart upload; a lifecycle rule should clean it up")
	}
}
