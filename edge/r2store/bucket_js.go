//go:build js && wasm

package r2store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/edge/glue"
)

// Binding is the Bucket of the worker's R2 binding, reached through the
// glue's operations r2get, r2head and r2list (edge/worker.mjs), which call
// the binding's get(key, {range: {offset, length}}), head(key) and
// list({prefix, startAfter, cursor, limit}) in the request's context.
// Bodies are the binding's streams, read chunk by chunk.
type Binding struct{}

var _ Bucket = Binding{}

// Get implements Bucket.
func (Binding) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, int64, error) {
	v, g, release, err := glue.Connect(ctx, "r2get", key, off, n)
	if err != nil {
		return nil, 0, bindingErr("get", key, err)
	}
	if v.IsNull() {
		release()
		return nil, 0, fmt.Errorf("r2 get %s: %w", key, store.ErrNotFound)
	}
	size := int64(v.Get("size").Float())
	if b, ok := glue.Bytes(v); ok {
		release()
		return io.NopCloser(bytes.NewReader(b)), size, nil
	}
	want := min(n, max(size-off, 0))
	return glue.NewBody(ctx, g, v.Get("reader"), want, release), size, nil
}

// Head implements Bucket.
func (Binding) Head(ctx context.Context, key string) (int64, error) {
	v, _, release, err := glue.Connect(ctx, "r2head", key)
	if err != nil {
		return 0, bindingErr("head", key, err)
	}
	release()
	if v.IsNull() {
		return 0, fmt.Errorf("r2 head %s: %w", key, store.ErrNotFound)
	}
	return int64(v.Float()), nil
}

// List implements Bucket.
func (Binding) List(ctx context.Context, prefix, startAfter, cursor string, limit int) ([]store.ObjectInfo, string, error) {
	v, _, release, err := glue.Connect(ctx, "r2list", prefix, startAfter, cursor, limit)
	if err != nil {
		return nil, "", bindingErr("list", prefix, err)
	}
	release()
	flat := v.Get("objects") // [key, size, key, size, ...]
	page := make([]store.ObjectInfo, 0, flat.Length()/2)
	for i := 0; i+1 < flat.Length(); i += 2 {
		page = append(page, store.ObjectInfo{Key: flat.Index(i).String(), Size: int64(flat.Index(i + 1).Float())})
	}
	next := ""
	if c := v.Get("cursor"); c.Truthy() {
		next = c.String()
	}
	return page, next, nil
}

func bindingErr(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("r2 %s %s: %v: %w", op, key, err, ErrBucket)
}
