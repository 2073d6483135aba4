// Package r2store is a read-only store.Store over a Cloudflare R2 bucket
// binding, for kv0's edge worker: ranged reads (get with a range), sizes
// (head) and listings (list with a prefix and a start position, page by
// page). Writes fail with store.ErrNotSupported. The JavaScript side of
// the binding is behind the Bucket interface (bucket_js.go implements it
// in the worker), so the store's logic is tested on any platform.
package r2store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kv0/kv0/core/store"
)

// ErrBucket means the R2 binding failed (an exception of get, head or
// list, or a body that ended early). The API answers it with 502.
var ErrBucket = errors.New("r2: the bucket binding failed")

// Bucket is what the store needs of an R2 binding. Keys are whole bucket
// keys. Implementations return store.ErrNotFound for a missing object.
type Bucket interface {
	// Get returns the body of [off, off+n) of key (the object's bytes from
	// off when it ends first) and the object's size.
	Get(ctx context.Context, key string, off, n int64) (body io.ReadCloser, size int64, err error)
	// Head returns the size of key.
	Head(ctx context.Context, key string) (int64, error)
	// List returns one page of the keys under prefix after startAfter (or,
	// with a cursor from a previous page, that page's continuation), at
	// most limit of them, and the cursor of the next page ("" at the end).
	List(ctx context.Context, prefix, startAfter, cursor string, limit int) (page []store.ObjectInfo, next string, err error)
}

// pageLimit is the largest page R2's list returns.
const pageLimit = 1000

// Store is the read-only store over a Bucket, rooted at a key prefix:
// its key K is the bucket's key prefix/K, and nothing outside the prefix
// can be named.
type Store struct {
	b      Bucket
	prefix string // "" or "a/b/"
}

var _ store.Store = (*Store)(nil)

// New returns the store over the keys of b under prefix (a clean slash
// path, or "" for the whole bucket).
func New(b Bucket, prefix string) (*Store, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return &Store{b: b}, nil
	}
	if err := store.ValidateKey(prefix); err != nil {
		return nil, fmt.Errorf("r2 prefix %q: %w", prefix, err)
	}
	return &Store{b: b, prefix: prefix + "/"}, nil
}

// ReadAt implements store.Store with one ranged get, whose body is read
// straight into p.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if done, err := store.CheckRead(ctx, s, "r2", key, p, off); done {
		return err
	}
	body, size, err := s.b.Get(ctx, s.prefix+key, off, int64(len(p)))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
			return err
		}
		// R2 refuses a range that starts past the end: tell that apart
		// from a failing binding by the object's size.
		if n, herr := s.b.Head(ctx, s.prefix+key); herr == nil && off+int64(len(p)) > n {
			return fmt.Errorf("r2 read %s [%d, %d) of %d bytes: %w", key, off, off+int64(len(p)), n, store.ErrShortObject)
		}
		return err
	}
	defer body.Close()
	if off+int64(len(p)) > size {
		return fmt.Errorf("r2 read %s [%d, %d) of %d bytes: %w", key, off, off+int64(len(p)), size, store.ErrShortObject)
	}
	if n, err := io.ReadFull(body, p); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("r2 read %s [%d, %d): got %d bytes: %v: %w", key, off, off+int64(len(p)), n, err, ErrBucket)
	}
	return nil
}

// Stat implements store.Store with head.
func (s *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ObjectInfo{}, err
	}
	n, err := s.b.Head(ctx, s.prefix+key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return store.ObjectInfo{Key: key, Size: n}, nil
}

// List implements store.Store, page after page until opts.Limit or the
// end.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	var out []store.ObjectInfo
	cursor := ""
	prefix, after := s.prefix+opts.Prefix, ""
	if opts.StartAfter != "" {
		after = s.prefix + opts.StartAfter
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		limit := pageLimit
		if opts.Limit > 0 {
			limit = min(limit, opts.Limit-len(out))
		}
		page, next, err := s.b.List(ctx, prefix, after, cursor, limit)
		if err != nil {
			return nil, err
		}
		for _, o := range page {
			// The binding is asked for these bounds; hold it to them, as
			// callers rely on sorted, bounded listings.
			if o.Key <= after || !strings.HasPrefix(o.Key, prefix) {
				return nil, fmt.Errorf("r2 list %q: the binding answered %q out of bounds: %w", prefix, o.Key, ErrBucket)
			}
			o.Key = o.Key[len(s.prefix):]
			if len(out) > 0 && o.Key <= out[len(out)-1].Key {
				return nil, fmt.Errorf("r2 list %q: the binding answered %q out of order: %w", prefix, o.Key, ErrBucket)
			}
			out = append(out, o)
		}
		if next == "" || (opts.Limit > 0 && len(out) >= opts.Limit) {
			return out, nil
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("r2 list %q: an empty page with a cursor: %w", opts.Prefix, ErrBucket)
		}
		cursor = next
	}
}

// PutIfAbsent returns store.ErrNotSupported: the store is read-only.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return fmt.Errorf("r2 create %s: read-only store: %w", key, store.ErrNotSupported)
}

// Put returns store.ErrNotSupported: the store is read-only.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	return fmt.Errorf("r2 put %s: read-only store: %w", key, store.ErrNotSupported)
}

// Delete returns store.ErrNotSupported: the store is read-only.
func (s *Store) Delete(ctx context.Context, key string) error {
	return fmt.Errorf("r2 delete %s: read-only store: %w", key, store.ErrNotSupported)
}
