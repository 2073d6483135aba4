package gcsstore

import (
	"context"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/kv0/kv0/core/store"
)

var _ store.Streamer = (*Store)(nil)

// CreateNoSync implements store.Streamer with a resumable upload: the
// pieces are sent in chunks of ChunkSize as they fill, and Commit sends the
// last one, which finalizes the object (an object smaller than a chunk is
// stored with one request on Commit). Nothing is visible at the key before
// that. Abort cancels the upload; the service drops an unfinished session
// by itself. Memory holds at most one chunk.
func (s *Store) CreateNoSync(ctx context.Context, key string) (store.ObjectWriter, error) {
	okey, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := s.bucket.Object(okey).NewWriter(wctx)
	w.ChunkSize = ChunkSize
	w.ChunkRetryDeadline = s.timeout
	w.ContentType = "application/octet-stream"
	return &chunkWriter{s: s, key: key, okey: okey, w: w, cancel: cancel}, nil
}

// chunkWriter is a store.ObjectWriter over a resumable upload.
type chunkWriter struct {
	s         *Store
	key, okey string
	w         *storage.Writer
	cancel    context.CancelFunc
	done      bool
}

func (w *chunkWriter) Append(p []byte) error {
	if w.done {
		return fmt.Errorf("gcs put gs://%s/%s: append after commit or abort", w.s.name, w.okey)
	}
	if _, err := w.w.Write(p); err != nil {
		return w.s.mapErr("put", w.key, err)
	}
	return nil
}

func (w *chunkWriter) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("gcs put gs://%s/%s: commit after commit or abort", w.s.name, w.okey)
	}
	w.done = true
	defer w.cancel()
	// The upload runs under the context it was created with; a caller
	// that gives up on the commit (or its deadline) cancels it.
	cctx, ccancel := w.s.withTimeout(ctx)
	defer ccancel()
	stop := context.AfterFunc(cctx, w.cancel)
	defer stop()
	if err := w.w.Close(); err != nil {
		if cctx.Err() != nil {
			err = cctx.Err()
		}
		return w.s.mapErr("put", w.key, err)
	}
	return nil
}

func (w *chunkWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.cancel()
	_ = w.w.Close() // waits for the upload to stop; its error is the cancellation
}
