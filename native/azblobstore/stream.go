package azblobstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	"github.com/kv0/kv0/core/store"
)

var _ store.Streamer = (*Store)(nil)

// CreateNoSync implements store.Streamer with staged blocks: the pieces
// are gathered into blocks of BlockSize bytes, each staged (Put Block) as
// soon as it is full, and Commit stages the last one and commits the list
// (Put Block List), which makes the blob appear whole. Uncommitted blocks
// are invisible to reads and listings, and the service discards them (a
// week later, or at the next write of the blob), so Abort has nothing to
// send. An object smaller than a block is stored with one Put Blob on
// Commit. Memory holds at most one block.
func (s *Store) CreateNoSync(ctx context.Context, key string) (store.ObjectWriter, error) {
	okey, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &blockWriter{s: s, ctx: ctx, key: key, okey: okey, idPrefix: newBlockPrefix()}, nil
}

// blockWriter is a store.ObjectWriter over staged blocks.
type blockWriter struct {
	s         *Store
	ctx       context.Context
	key, okey string
	idPrefix  string
	buf       []byte
	ids       []string
	done      bool
}

func (w *blockWriter) Append(p []byte) error {
	if w.done {
		return fmt.Errorf("azure put az://%s/%s: append after commit or abort", w.s.name, w.okey)
	}
	for len(p) > 0 {
		n := min(len(p), BlockSize-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p = p[n:]
		if len(w.buf) == BlockSize {
			if err := w.stage(w.ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// stage stages buf as the next block. Block ids of one blob must all have
// the same length: the random prefix and a fixed-width number.
func (w *blockWriter) stage(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return w.s.mapErr("put", w.key, err)
	}
	ctx, cancel := w.s.withTimeout(ctx)
	defer cancel()
	id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", w.idPrefix, len(w.ids)))
	if _, err := w.s.client.NewBlockBlobClient(w.okey).StageBlock(ctx, id, nopCloser{bytes.NewReader(w.buf)}, nil); err != nil {
		return w.s.mapErr("put", w.key, err)
	}
	w.ids = append(w.ids, id)
	w.buf = w.buf[:0]
	return nil
}

func (w *blockWriter) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("azure put az://%s/%s: commit after commit or abort", w.s.name, w.okey)
	}
	if err := w.ctx.Err(); err != nil {
		w.done = true
		return w.s.mapErr("put", w.key, err)
	}
	if len(w.ids) == 0 {
		w.done = true
		return w.s.Put(ctx, w.key, w.buf)
	}
	if len(w.buf) > 0 {
		if err := w.stage(ctx); err != nil {
			return err
		}
	}
	w.done = true
	cctx, cancel := w.s.withTimeout(ctx)
	defer cancel()
	if _, err := w.s.client.NewBlockBlobClient(w.okey).CommitBlockList(cctx, w.ids, nil); err != nil {
		return w.s.mapErr("put", w.key, err)
	}
	return nil
}

func (w *blockWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.buf = nil
	w.ids = nil
}
