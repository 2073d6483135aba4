package s3store

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kv0/kv0/core/store"
)

// PartSize is the size of the parts a streamed object is uploaded in (S3
// wants at least 5 MiB for every part but the last).
var PartSize = 8 << 20

var _ store.Streamer = (*Store)(nil)

// CreateNoSync implements store.Streamer. The pieces are gathered into
// parts of PartSize bytes, each uploaded as soon as it is full, in one
// multipart upload that Commit completes; an object smaller than a part
// is stored with one PutObject on Commit. Memory thus holds at most one
// part. Abort aborts the upload.
func (s *Store) CreateNoSync(ctx context.Context, key string) (store.ObjectWriter, error) {
	okey, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &partWriter{s: s, ctx: ctx, key: key, okey: okey}, nil
}

// partWriter is a store.ObjectWriter over a multipart upload.
type partWriter struct {
	s         *Store
	ctx       context.Context
	key, okey string
	buf       []byte
	upload    *string // the upload id, once started
	parts     []types.CompletedPart
	done      bool
}

func (w *partWriter) Append(p []byte) error {
	if w.done {
		return fmt.Errorf("s3 put s3://%s/%s: append after commit or abort", w.s.bucket, w.okey)
	}
	for len(p) > 0 {
		// The buffer grows to a part as pieces come: a small object never
		// costs a whole part.
		n := min(len(p), PartSize-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p = p[n:]
		if len(w.buf) == PartSize {
			if err := w.uploadPart(); err != nil {
				return err
			}
		}
	}
	return nil
}

// uploadPart uploads buf as the next part, starting the upload first.
func (w *partWriter) uploadPart() error {
	s := w.s
	ctx, cancel := s.withTimeout(w.ctx)
	defer cancel()
	if w.upload == nil {
		out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(w.okey)})
		if err != nil {
			return s.mapErr("put", w.key, err)
		}
		w.upload = out.UploadId
	}
	num := int32(len(w.parts) + 1)
	out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(w.okey),
		UploadId:      w.upload,
		PartNumber:    aws.Int32(num),
		Body:          bytes.NewReader(w.buf),
		ContentLength: aws.Int64(int64(len(w.buf))),
	})
	if err != nil {
		return s.mapErr("put", w.key, err)
	}
	w.parts = append(w.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	w.buf = w.buf[:0]
	return nil
}

func (w *partWriter) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("s3 put s3://%s/%s: commit after commit or abort", w.s.bucket, w.okey)
	}
	if w.upload == nil {
		w.done = true
		return w.s.Put(ctx, w.key, w.buf)
	}
	w.ctx = ctx
	if len(w.buf) > 0 {
		if err := w.uploadPart(); err != nil {
			return err
		}
	}
	s := w.s
	cctx, cancel := s.withTimeout(ctx)
	defer cancel()
	_, err := s.client.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             aws.String(w.okey),
		UploadId:        w.upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
	})
	if err != nil {
		return s.mapErr("put", w.key, err)
	}
	w.done = true
	return nil
}

func (w *partWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.buf = nil
	if w.upload != nil {
		// Best effort: a bucket lifecycle rule removes what is left.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 30*time.Second)
		defer cancel()
		_, _ = w.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(w.s.bucket), Key: aws.String(w.okey), UploadId: w.upload})
	}
}
