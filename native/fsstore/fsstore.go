// Package fsstore is a store.Store over a folder of the local filesystem.
//
// Keys map to files below the root folder; a key can never name a file
// outside it (store.ValidateKey rejects "..", absolute paths and empty
// elements, and symbolic links are not followed out of the root when
// creating files). Writes go to a temporary file in the target folder first,
// so readers never observe a partially written object: Put renames it into
// place, PutIfAbsent hard-links it (link(2) fails when the target exists,
// which is what makes Lance commits atomic on local disk).
package fsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kv0/kv0/core/store"
)

// tmpPrefix starts the names of temporary files; List skips them.
const tmpPrefix = ".kv0-tmp-"

// Store is a store.Store rooted at a local folder. It is safe for concurrent
// use by many goroutines and processes.
type Store struct {
	root string
	// NoSync skips fsync on writes (tests and benchmarks only).
	NoSync bool
}

var _ store.Store = (*Store)(nil)

// Open returns a store rooted at dir, creating the folder if needed.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsstore: %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("fsstore: %w", err)
	}
	return &Store{root: abs}, nil
}

// OpenExisting is like Open but fails with store.ErrNotFound when dir does
// not exist, for read-only callers that must not create folders.
func OpenExisting(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsstore: %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fsstore: %s: %w", dir, store.ErrNotFound)
		}
		return nil, fmt.Errorf("fsstore: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("fsstore: %s is not a folder: %w", dir, store.ErrNotFound)
	}
	return &Store{root: abs}, nil
}

// Root returns the absolute path of the store's folder.
func (s *Store) Root() string { return s.root }

func (s *Store) path(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// mapErr turns OS errors into store errors, naming the key.
func mapErr(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: %w", op, key, store.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s %s: %w", op, key, store.ErrExists)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// ReadAt implements store.Store.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return mapErr("read", key, err)
	}
	defer f.Close()
	if off < 0 {
		return fmt.Errorf("read %s at %d: %w", key, off, store.ErrShortObject)
	}
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == io.EOF || err == nil {
		return fmt.Errorf("read %s [%d, %d): got %d bytes: %w", key, off, off+int64(len(p)), n, store.ErrShortObject)
	}
	return mapErr("read", key, err)
}

// Stat implements store.Store.
func (s *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	name, err := s.path(key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ObjectInfo{}, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return store.ObjectInfo{}, mapErr("stat", key, err)
	}
	if fi.IsDir() {
		return store.ObjectInfo{}, fmt.Errorf("stat %s: is a folder: %w", key, store.ErrNotFound)
	}
	return store.ObjectInfo{Key: key, Size: fi.Size()}, nil
}

// List implements store.Store. It walks the folder that contains the prefix.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if err := store.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := ""
	if i := strings.LastIndexByte(opts.Prefix, '/'); i >= 0 {
		dir = opts.Prefix[:i]
	}
	var out []store.ObjectInfo
	err := s.walk(ctx, dir, func(key string, size int64) {
		if strings.HasPrefix(key, opts.Prefix) && key > opts.StartAfter {
			out = append(out, store.ObjectInfo{Key: key, Size: size})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

func (s *Store) walk(ctx context.Context, dir string, fn func(key string, size int64)) error {
	entries, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(dir)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
			return nil
		}
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory") {
			return nil
		}
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		key := e.Name()
		if dir != "" {
			key = dir + "/" + e.Name()
		}
		if e.IsDir() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.walk(ctx, key, fn); err != nil {
				return err
			}
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while listing
			}
			return fmt.Errorf("list %s: %w", key, err)
		}
		if info.Mode().IsRegular() {
			fn(key, info.Size())
		}
	}
	return nil
}

// writeTemp writes data to a new temporary file in the folder of name and
// returns its path. The file is synced unless NoSync is set.
func (s *Store) writeTemp(name string, data []byte) (string, error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && !s.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// PutIfAbsent implements store.Store with link(2), which fails atomically
// when the target exists.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := s.writeTemp(name, data)
	if err != nil {
		return mapErr("create", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, name); err != nil {
		return mapErr("create", key, err)
	}
	return s.syncDir(filepath.Dir(name))
}

// Put implements store.Store with rename(2).
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := s.writeTemp(name, data)
	if err != nil {
		return mapErr("put", key, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return mapErr("put", key, err)
	}
	return s.syncDir(filepath.Dir(name))
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapErr("delete", key, err)
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	if s.NoSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
