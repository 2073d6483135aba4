// Package fsstore is a store.Store over a folder of the local filesystem.
//
// Keys map to files below the root folder; a key can never name a file
// outside it (store.ValidateKey rejects "..", absolute paths and empty
// elements, and symbolic links are not followed out of the root when
// creating files). Only regular files are objects: a FIFO, a socket or a
// device in the folder reads as not found, without being waited on.
// Writes go to a temporary file in the target folder first,
// so readers never observe a partially written object: Put renames it into
// place, PutIfAbsent hard-links it (link(2) fails when the target exists,
// which is what makes Lance commits atomic on local disk). Both sync the
// file before it gets its name and the folder after, so the object is
// durable when they return; PutNoSync (store.Syncer) defers both to a later
// Sync of many keys at once.
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
	"sync"
	"time"

	"github.com/kv0/kv0/core/store"
)

// tmpPrefix starts the names of temporary files; List skips them.
const tmpPrefix = ".kv0-tmp-"

// Store is a store.Store rooted at a local folder. It is safe for concurrent
// use by many goroutines and processes.
type Store struct {
	root string
	// dir, on a store opened with OpenConfined, confines reads (ReadAt,
	// Stat, List) to the folder: a symbolic link inside it that points
	// outside is not followed (os.Root), so a server reading keys it is
	// handed (kv0 serve) never reads outside its root. It doubles the
	// cost of a small ReadAt, hence not the default.
	dir *os.Root
	// NoSync skips fsync on writes (tests and benchmarks only).
	NoSync bool
}

// OpenConfined is OpenExisting for a store whose reads never follow a
// symbolic link out of dir: such a key reads as not found.
func OpenConfined(dir string) (*Store, error) {
	s, err := OpenExisting(dir)
	if err != nil {
		return nil, err
	}
	if s.dir, err = os.OpenRoot(s.root); err != nil {
		return nil, fmt.Errorf("fsstore: %w", err)
	}
	return s, nil
}

// errNotRegular is the refusal of a file that is neither a regular file
// nor a folder (a FIFO, a socket, a device): reading one could block
// forever, holding an OS thread, or have side effects, so the store holds
// no object there. mapErr reports it as store.ErrNotFound.
var errNotRegular = errors.New("not a regular file")

// open opens the regular file of a validated key for reading (or a
// folder, when dirOK). A file of another kind is errNotRegular: it is
// opened without waiting (a FIFO does not block the open) and closed at
// once, or not opened at all (a socket).
func (s *Store) open(key string, dirOK bool) (*os.File, error) {
	return s.openName(filepath.FromSlash(key), dirOK)
}

// openName is open of a path relative to the folder, in the system's
// form ("" for the folder itself).
func (s *Store) openName(name string, dirOK bool) (*os.File, error) {
	var (
		f   *os.File
		err error
	)
	switch {
	case s.dir == nil:
		f, err = os.OpenFile(filepath.Join(s.root, name), os.O_RDONLY|readFlags, 0)
	case name == "":
		f, err = s.dir.OpenFile(".", os.O_RDONLY|readFlags, 0)
	default:
		f, err = s.dir.OpenFile(name, os.O_RDONLY|readFlags, 0)
	}
	if err != nil {
		if notOpenable(err) {
			return nil, errNotRegular
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() && !(dirOK && fi.IsDir()) {
		f.Close()
		return nil, errNotRegular
	}
	return f, nil
}

// stat and lstat describe the file of a validated key.
func (s *Store) stat(key string) (fs.FileInfo, error) {
	if s.dir != nil {
		return s.dir.Stat(filepath.FromSlash(key))
	}
	return os.Stat(filepath.Join(s.root, filepath.FromSlash(key)))
}

func (s *Store) lstat(key string) (fs.FileInfo, error) {
	if s.dir != nil {
		return s.dir.Lstat(filepath.FromSlash(key))
	}
	return os.Lstat(filepath.Join(s.root, filepath.FromSlash(key)))
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Syncer      = (*Store)(nil)
	_ store.Overwriter  = (*Store)(nil)
	_ store.PartsPutter = (*Store)(nil)
	_ store.Streamer    = (*Store)(nil)
)

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

// escapes reports whether err is os.Root's refusal of a path that leaves
// the folder (through a symbolic link; keys themselves are validated).
// The os package exports no sentinel for it.
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// mapErr turns OS errors into store errors, naming the key.
func mapErr(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: %w", op, key, store.ErrNotFound)
	case escapes(err):
		return fmt.Errorf("%s %s: a symbolic link leads outside the store's folder: %w", op, key, store.ErrNotFound)
	case errors.Is(err, errNotRegular):
		return fmt.Errorf("%s %s: not a regular file (a FIFO, socket or device is never read): %w", op, key, store.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s %s: %w", op, key, store.ErrExists)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// ReadAt implements store.Store.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := s.open(key, false)
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
	if err := store.ValidateKey(key); err != nil {
		return store.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ObjectInfo{}, err
	}
	fi, err := s.stat(key)
	if err != nil {
		return store.ObjectInfo{}, mapErr("stat", key, err)
	}
	if fi.IsDir() {
		return store.ObjectInfo{}, fmt.Errorf("stat %s: is a folder: %w", key, store.ErrNotFound)
	}
	if !fi.Mode().IsRegular() {
		return store.ObjectInfo{}, mapErr("stat", key, errNotRegular)
	}
	return store.ObjectInfo{Key: key, Size: fi.Size()}, nil
}

// List implements store.Store. It walks the folder that contains the prefix.
// Names come from the folder listings alone; only the files returned are
// stat'ed for their size, so a listing with a limit (the newest manifest of
// a dataset) costs one stat per result, not one per file.
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
	var keys []string
	err := s.walk(ctx, dir, func(key string) {
		if strings.HasPrefix(key, opts.Prefix) && key > opts.StartAfter {
			keys = append(keys, key)
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	var out []store.ObjectInfo
	for _, key := range keys {
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
		info, err := s.lstat(key)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while listing
			}
			return nil, fmt.Errorf("list %s: %w", key, err)
		}
		if info.Mode().IsRegular() {
			out = append(out, store.ObjectInfo{Key: key, Size: info.Size()})
		}
	}
	return out, nil
}

// readDirUnsorted is os.ReadDir of the folder's subfolder name ("" for
// the folder itself), confined to it, without the sort (List sorts the
// keys).
func (s *Store) readDirUnsorted(name string) ([]os.DirEntry, error) {
	f, err := s.openName(name, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// staleTemp is the age past which a temporary file is the leftover of a
// writer that crashed (a streamed data file is written for seconds, not
// hours).
const staleTemp = 24 * time.Hour

// removeStale removes the temporary file e of folder dir if it is older
// than staleTemp. Listing is what finds them: a cleanup lists the data
// folder, so a crash's leftovers go with the next cleanup.
func (s *Store) removeStale(dir string, e fs.DirEntry) {
	if info, err := e.Info(); err == nil && !info.IsDir() && time.Since(info.ModTime()) > staleTemp {
		_ = os.Remove(filepath.Join(s.root, filepath.FromSlash(dir), e.Name()))
	}
}

// walk calls fn with the key of every file below dir that is not a
// temporary file (regular files and anything else but folders; List
// checks the type when it stats the file).
func (s *Store) walk(ctx context.Context, dir string, fn func(key string)) error {
	entries, err := s.readDirUnsorted(filepath.FromSlash(dir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || escapes(err) || errors.Is(err, errNotRegular) {
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
			s.removeStale(dir, e)
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
		fn(key)
	}
	return nil
}

// writeTemp writes parts to a new temporary file in the folder of name and
// returns its path. The file is synced when durable is set (and NoSync is not).
func (s *Store) writeTemp(name string, parts [][]byte, durable bool) (string, error) {
	dir := filepath.Dir(name)
	if err := s.ensureDir(dir); err != nil {
		return "", err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if err == nil && durable && !s.NoSync {
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

// ensureDir creates dir and its missing parents. Unless NoSync is set, the
// folder that gained each new entry is synced at once, so that a folder
// whose files are later synced is itself durable.
func (s *Store) ensureDir(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	// The deepest ancestor that exists, below or at the root.
	base := dir
	for base != s.root && base != filepath.Dir(base) {
		if _, err := os.Stat(filepath.Dir(base)); err == nil {
			break
		}
		base = filepath.Dir(base)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if s.NoSync {
		return nil
	}
	// base is the first folder created: sync its parent and every created
	// folder but the last (each gained one entry).
	for d := dir; ; d = filepath.Dir(d) {
		parent := filepath.Dir(d)
		if err := s.syncDir(parent); err != nil {
			return err
		}
		if d == base || parent == d {
			return nil
		}
	}
}

// PutIfAbsent implements store.Store with link(2), which fails atomically
// when the target exists.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.PutIfAbsentAfterSync(ctx, key, data)
}

// PutIfAbsentAfterSync implements store.Syncer: it writes data to a
// temporary file, syncs it together with the objects at synced and their
// folders (concurrently), links it at key and syncs key's folder.
func (s *Store) PutIfAbsentAfterSync(ctx context.Context, key string, data []byte, synced ...string) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	paths, err := s.syncPaths(synced)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := s.writeTemp(name, [][]byte{data}, false)
	if err != nil {
		return mapErr("create", key, err)
	}
	defer os.Remove(tmp)
	if !s.NoSync {
		if err := syncAll(append(paths, tmp)); err != nil {
			return fmt.Errorf("create %s: %w", key, err)
		}
	}
	if err := os.Link(tmp, name); err != nil {
		return mapErr("create", key, err)
	}
	return s.syncDir(filepath.Dir(name))
}

// Put implements store.Store with rename(2). The object is durable when Put
// returns.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, key, [][]byte{data}, true)
}

// PutNoSync implements store.Syncer: Put without syncing the file or its
// folder. Readers see the whole object or none of it, but after a crash the
// name may be missing or the content empty until Sync has returned.
func (s *Store) PutNoSync(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, key, [][]byte{data}, false)
}

// PutPartsNoSync implements store.PartsPutter: PutNoSync of the
// concatenation of parts, written one after the other.
func (s *Store) PutPartsNoSync(ctx context.Context, key string, parts [][]byte) error {
	return s.put(ctx, key, parts, false)
}

func (s *Store) put(ctx context.Context, key string, parts [][]byte, durable bool) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := s.writeTemp(name, parts, durable)
	if err != nil {
		return mapErr("put", key, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return mapErr("put", key, err)
	}
	if !durable {
		return nil
	}
	return s.syncDir(filepath.Dir(name))
}

// CreateNoSync implements store.Streamer: the pieces go to a temporary
// file in key's folder, renamed to key on Commit (not synced, as
// PutNoSync).
func (s *Store) CreateNoSync(ctx context.Context, key string) (store.ObjectWriter, error) {
	name, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := filepath.Dir(name)
	if err := s.ensureDir(dir); err != nil {
		return nil, mapErr("put", key, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, mapErr("put", key, err)
	}
	return &fileWriter{f: f, tmp: tmp, name: name, key: key}, nil
}

// fileWriter is a store.ObjectWriter on a temporary file.
type fileWriter struct {
	f         *os.File
	tmp, name string
	key       string
	done      bool
}

func (w *fileWriter) Append(p []byte) error {
	if w.done {
		return fmt.Errorf("put %s: append after commit or abort", w.key)
	}
	_, err := w.f.Write(p)
	return mapErr("put", w.key, err)
}

func (w *fileWriter) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("put %s: commit after commit or abort", w.key)
	}
	w.done = true
	err := w.f.Close()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Rename(w.tmp, w.name)
	}
	if err != nil {
		os.Remove(w.tmp)
	}
	return mapErr("put", w.key, err)
}

func (w *fileWriter) Abort() {
	if !w.done {
		w.done = true
		w.f.Close()
		os.Remove(w.tmp)
	}
}

// Overwrite implements store.Overwriter: it writes data over the existing
// file in place (and truncates what is left of a longer one), without
// syncing; a missing file is created as PutNoSync does.
func (s *Store) Overwrite(ctx context.Context, key string, data []byte) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return s.put(ctx, key, [][]byte{data}, false)
	}
	if err != nil {
		return mapErr("overwrite", key, err)
	}
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("overwrite %s: not a regular file", key)
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return mapErr("overwrite", key, err)
}

// Sync implements store.Syncer: it syncs each file and each distinct folder
// holding one, all concurrently, and returns when all are durable.
func (s *Store) Sync(ctx context.Context, keys ...string) error {
	paths, err := s.syncPaths(keys)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.NoSync {
		return nil
	}
	return syncAll(paths)
}

// syncPaths returns the files of keys and the distinct folders holding them.
func (s *Store) syncPaths(keys []string) ([]string, error) {
	var paths, dirs []string
	seen := map[string]bool{}
	for _, key := range keys {
		name, err := s.path(key)
		if err != nil {
			return nil, err
		}
		paths = append(paths, name)
		if d := filepath.Dir(name); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return append(paths, dirs...), nil
}

// syncAll fsyncs the files and folders at paths concurrently.
func syncAll(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = syncPath(p)
		}()
	}
	errs[0] = syncPath(paths[0])
	wg.Wait()
	return errors.Join(errs...)
}

// syncPath fsyncs the file or folder at p.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync %s: %w", p, store.ErrNotFound)
		}
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
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
