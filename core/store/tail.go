package store

import (
	"context"
	"fmt"
)

// TailReader is an optional interface for stores that can return the end of
// an object together with its size in a single request. Readers of
// footer-terminated formats (Lance manifests and data files) use it when they
// do not know an object's size, saving the Stat round trip.
//
// An HTTP store can implement it with one bounded Range request whose
// Content-Range response header reports the total size; a store that cannot
// should simply not implement it and let ReadTail fall back to Stat + ReadAt.
type TailReader interface {
	// ReadTail returns the last min(n, size) bytes of the object key and the
	// object's size. It returns ErrNotFound when the object is missing.
	ReadTail(ctx context.Context, key string, n int) ([]byte, int64, error)
}

// ReadTail returns the last min(n, size) bytes of key and its size: one
// request on a TailReader, a Stat and a ReadAt on any other store.
func ReadTail(ctx context.Context, s Store, key string, n int) ([]byte, int64, error) {
	if n < 0 {
		return nil, 0, fmt.Errorf("store: ReadTail %s: negative length %d", key, n)
	}
	if tr, ok := s.(TailReader); ok {
		return tr.ReadTail(ctx, key, n)
	}
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	m := min(int64(n), info.Size)
	buf := make([]byte, m)
	if m > 0 {
		if err := s.ReadAt(ctx, key, buf, info.Size-m); err != nil {
			return nil, 0, err
		}
	}
	return buf, info.Size, nil
}
