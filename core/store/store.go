// Package store defines the object-store-shaped interface through which every
// kv0 component reads and writes bytes, and an in-memory implementation.
//
// The interface is deliberately small so that it maps one-to-one onto a local
// folder, an S3 bucket or a read-only HTTP server:
//
//	ReadAt      ranged read of [off, off+len(p)) of one object
//	Stat        size of one object
//	List        sorted listing with prefix, start-after and limit
//	PutIfAbsent create-only write (the commit primitive of Lance)
//	Put         overwriting write
//	Delete      removal
//
// Keys are slash-separated relative paths such as "t.lance/_versions/1.manifest".
// Implementations are safe for concurrent use.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors returned by stores. Match them with errors.Is: implementations wrap
// them with the key and the operation.
var (
	// ErrNotFound means the object does not exist.
	ErrNotFound = errors.New("store: object not found")
	// ErrExists means a create-only write found the object already there.
	ErrExists = errors.New("store: object already exists")
	// ErrNotSupported means the store cannot perform the operation, e.g.
	// listing on a static HTTP server or writing to a read-only store.
	ErrNotSupported = errors.New("store: operation not supported")
	// ErrInvalidKey means a key is empty, absolute, or escapes the store root.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrShortObject means a ranged read reached past the end of the object.
	ErrShortObject = errors.New("store: read past end of object")
)

// ObjectInfo describes one object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// ListOptions selects the objects a List call returns. Results are sorted by
// key in byte-wise order.
type ListOptions struct {
	// Prefix restricts the listing to keys starting with it.
	Prefix string
	// StartAfter restricts the listing to keys greater than it.
	StartAfter string
	// Limit caps the number of results; zero or negative means no limit.
	Limit int
}

// Store is the storage interface of kv0. See the package comment.
type Store interface {
	// ReadAt fills p with the bytes [off, off+len(p)) of the object key. It
	// reads the whole range or returns an error: ErrNotFound when the object
	// is missing, ErrShortObject when the range passes its end.
	ReadAt(ctx context.Context, key string, p []byte, off int64) error
	// Stat returns the size of the object key, or ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List returns the objects selected by opts in key order, or
	// ErrNotSupported on stores that cannot list.
	List(ctx context.Context, opts ListOptions) ([]ObjectInfo, error)
	// PutIfAbsent creates key with data, or returns ErrExists when it
	// already exists. Readers never observe a partially written object.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Put creates or replaces key with data.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes key. Deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
}

// ValidateKey reports whether key is a clean relative slash path: not empty,
// not absolute, with no empty, "." or ".." elements and no backslashes or NUL
// bytes. Every store calls it before touching a key.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for _, elem := range strings.Split(key, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// ValidatePrefix is like ValidateKey for listing prefixes, which may be empty
// or end with a slash.
func ValidatePrefix(prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		if prefix == "" {
			return nil
		}
		return fmt.Errorf("%w: prefix %q", ErrInvalidKey, prefix)
	}
	return ValidateKey(p)
}

// Join joins key elements with slashes, skipping empty ones.
func Join(elems ...string) string {
	var b strings.Builder
	for _, e := range elems {
		e = strings.Trim(e, "/")
		if e == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(e)
	}
	return b.String()
}

// ReadAll reads a whole object with one Stat and one ReadAt. It is meant for
// small objects such as manifests, tags and transaction files, never for data
// files, which are always read by range.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, info.Size)
	if err := s.ReadAt(ctx, key, buf, 0); err != nil {
		return nil, err
	}
	return buf, nil
}

// CheckRead does what a remote store's ReadAt does before its ranged
// request: a negative offset fails with ErrShortObject, and an empty read
// costs one Stat, failing when the object is missing or shorter than off.
// done reports that nothing is left to read (an empty read that passed).
// what names the store in messages ("s3", "gcs").
func CheckRead(ctx context.Context, s Store, what, key string, p []byte, off int64) (done bool, err error) {
	if err := ctx.Err(); err != nil {
		return true, err
	}
	if off < 0 {
		return true, fmt.Errorf("%s read %s at %d: %w", what, key, off, ErrShortObject)
	}
	if len(p) > 0 {
		return false, nil
	}
	info, err := s.Stat(ctx, key)
	if err != nil {
		return true, err
	}
	if off > info.Size {
		return true, fmt.Errorf("%s read %s at %d of %d bytes: %w", what, key, off, info.Size, ErrShortObject)
	}
	return true, nil
}
