package lance

import (
	"container/list"
	"context"
	"sync"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// FileCache keeps opened data files (footer, column metadata and small
// global buffers) by store key. Data files never change once written (Lance
// names each by a random UUID), so an entry stays valid across versions of a
// dataset: a handle that reads the same fragments again, or moves to a newer
// version that kept them, skips their tail reads. Concurrent opens of one
// file share one read. A file is only read through a version that names
// it, so an entry whose versions were all removed is never read again (a
// reader that finds a version removed may Forget its files so that they do
// not stay in memory either); an entry whose size differs from the one a
// manifest records for its key (another file under a reused name) is opened
// again. A FileCache is safe for concurrent use.
type FileCache struct {
	max int

	mu    sync.Mutex
	items map[string]*list.Element // of *fileEntry
	lru   list.List                // front: most recently used
}

type fileEntry struct {
	key  string
	size int64         // the size the opener was given (0: unknown)
	done chan struct{} // closed once f or err is set
	f    *lancefile.File
	err  error
}

// DefaultFileCacheEntries is the size of the cache Open gives a dataset
// when OpenOptions.Files is nil.
const DefaultFileCacheEntries = 64

// NewFileCache returns a cache of at most entries opened files (at least 1).
func NewFileCache(entries int) *FileCache {
	return &FileCache{max: max(entries, 1), items: map[string]*list.Element{}}
}

// open returns the opened file key of size bytes (0: unknown), opening it
// on a miss. Failed opens are not kept.
func (c *FileCache) open(ctx context.Context, st store.Store, key string, size int64) (*lancefile.File, error) {
	if c == nil {
		return lancefile.Open(ctx, st, key, size)
	}
	c.mu.Lock()
	if el, ok := c.items[key]; ok && !sizeDiffers(el.Value.(*fileEntry), size) {
		c.lru.MoveToFront(el)
		e := el.Value.(*fileEntry)
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			return e.f, nil
		}
		// The open we waited for failed (perhaps its context ended): try
		// ourselves.
		return lancefile.Open(ctx, st, key, size)
	}
	if el, ok := c.items[key]; ok {
		c.lru.Remove(el) // another file under that name: replaced below
	}
	e := &fileEntry{key: key, size: size, done: make(chan struct{})}
	c.items[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.items, old.Value.(*fileEntry).key)
	}
	c.mu.Unlock()

	e.f, e.err = lancefile.Open(ctx, st, key, size)
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		if el, ok := c.items[key]; ok && el.Value.(*fileEntry) == e {
			c.lru.Remove(el)
			delete(c.items, key)
		}
		c.mu.Unlock()
	}
	return e.f, e.err
}

// sizeDiffers reports whether e was opened (or is being opened) as a file
// of another size than size (0: unknown, which matches any).
func sizeDiffers(e *fileEntry, size int64) bool {
	if size <= 0 {
		return false
	}
	if e.size > 0 {
		return e.size != size
	}
	select {
	case <-e.done:
		return e.err == nil && e.f.Size() != size
	default:
		return false
	}
}

// Forget drops the data files of d's version from the cache, except those
// keep (nil: none) also names: a reader that found d removed (a cleanup or
// purge took it, or the dataset was deleted) so lets its footers and small
// files leave memory. Reads under way keep the files they hold.
func (c *FileCache) Forget(d, keep *Dataset) {
	if c == nil || d == nil {
		return
	}
	kept := map[string]bool{}
	if keep != nil {
		for _, f := range keep.frags {
			for _, df := range f.pb.GetFiles() {
				kept[keep.k.data(df.GetPath())] = true
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range d.frags {
		for _, df := range f.pb.GetFiles() {
			key := d.k.data(df.GetPath())
			if el, ok := c.items[key]; ok && !kept[key] {
				c.lru.Remove(el)
				delete(c.items, key)
			}
		}
	}
}

// Len returns the number of files the cache holds (or is opening).
func (c *FileCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// openDataFile opens one data file of the dataset through its file cache.
func (d *Dataset) openDataFile(ctx context.Context, df *tablepb.DataFile) (*lancefile.File, error) {
	return d.k.files.open(ctx, d.st, d.k.data(df.GetPath()), int64(min(df.GetFileSizeBytes(), 1<<62)))
}

// DataFileBuffer returns global buffer i (1 or more: buffer 0 is the file's
// schema) of the first data file of a fragment, as a writer stored it with
// WriteOptions.FileBuffer, or nil when the file has no such buffer. The
// file's footer is read through the dataset's file cache, so a later read of
// the fragment does not read it again.
func (d *Dataset) DataFileBuffer(ctx context.Context, fragment uint64, i int) ([]byte, error) {
	lf, err := d.firstDataFile(ctx, fragment)
	if err != nil {
		return nil, err
	}
	if i < 1 || i >= lf.NumGlobalBuffers() {
		return nil, nil
	}
	return lf.GlobalBuffer(ctx, i)
}

// DataFileBufferParts returns parts of global buffer i of the first data
// file of a fragment (see WriteOptions.MoreFileBuffers): for each part, its
// Len bytes from offset Off within the buffer, fetched together where they
// lie close. It returns nil, nil when the file has no buffer i.
func (d *Dataset) DataFileBufferParts(ctx context.Context, fragment uint64, i int, parts []lancefile.Part) ([][]byte, error) {
	lf, err := d.firstDataFile(ctx, fragment)
	if err != nil {
		return nil, err
	}
	if i < 1 || i >= lf.NumGlobalBuffers() {
		return nil, nil
	}
	return lf.GlobalBufferParts(ctx, i, parts)
}

// firstDataFile opens the first data file of a fragment through the file
// cache.
func (d *Dataset) firstDataFile(ctx context.Context, fragment uint64) (*lancefile.File, error) {
	frags, err := d.selectFragments([]uint64{fragment})
	if err != nil {
		return nil, err
	}
	f := frags[0]
	if err := d.checkFiles(f); err != nil {
		return nil, err
	}
	return d.openDataFile(ctx, f.pb.GetFiles()[0])
}

// OpenFiles opens the data files of the given fragments (every fragment
// when ids is nil) through the dataset's file cache, concurrently, so that
// reads that follow start from their pages. Reads of such files cost no
// footer request until the cache evicts them.
func (d *Dataset) OpenFiles(ctx context.Context, ids []uint64) error {
	frags, err := d.selectFragments(ids)
	if err != nil {
		return err
	}
	var files []*tablepb.DataFile
	for _, f := range frags {
		if err := d.checkFiles(f); err != nil {
			return err
		}
		files = append(files, f.pb.GetFiles()...)
	}
	return parallel(ctx, len(files), func(ctx context.Context, i int) error {
		_, err := d.openDataFile(ctx, files[i])
		return err
	})
}
