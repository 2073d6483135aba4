package kvtest

import (
	"context"
	"sync"

	"github.com/kv0/kv0/core/store"
)

// FaultStore wraps a store.Store and fails the calls Fail picks, in the
// manner of pebble's errorfs. Safe for concurrent use.
type FaultStore struct {
	store.Store
	mu   sync.Mutex
	fail func(op, key string) error
}

var _ store.Store = (*FaultStore)(nil)

// SetFail installs fn (nil: fail nothing). op is "read", "stat", "list",
// "create", "put" or "delete".
func (f *FaultStore) SetFail(fn func(op, key string) error) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

func (f *FaultStore) check(op, key string) error {
	f.mu.Lock()
	fn := f.fail
	f.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(op, key)
}

// ReadAt implements store.Store.
func (f *FaultStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if err := f.check("read", key); err != nil {
		return err
	}
	return f.Store.ReadAt(ctx, key, p, off)
}

// Stat implements store.Store.
func (f *FaultStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := f.check("stat", key); err != nil {
		return store.ObjectInfo{}, err
	}
	return f.Store.Stat(ctx, key)
}

// List implements store.Store.
func (f *FaultStore) List(ctx context.Context, o store.ListOptions) ([]store.ObjectInfo, error) {
	if err := f.check("list", o.Prefix); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, o)
}

// PutIfAbsent implements store.Store.
func (f *FaultStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := f.check("create", key); err != nil {
		return err
	}
	return f.Store.PutIfAbsent(ctx, key, data)
}

// Put implements store.Store.
func (f *FaultStore) Put(ctx context.Context, key string, data []byte) error {
	if err := f.check("put", key); err != nil {
		return err
	}
	return f.Store.Put(ctx, key, data)
}

// Delete implements store.Store.
func (f *FaultStore) Delete(ctx context.Context, key string) error {
	if err := f.check("delete", key); err != nil {
		return err
	}
	return f.Store.Delete(ctx, key)
}
