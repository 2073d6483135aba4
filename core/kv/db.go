package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kv0/kv0/core/store"
)

var errShortTake = errors.New("take returned the wrong number of values")

// DB is an ordered key-value store on one operation log. Every read is
// served from an in-memory view; writes go to the view at once, to the WAL
// (when there is one) and to a pending buffer that is committed to the log
// in batches.
//
// A DB is safe for concurrent use by many goroutines. Close it when done: a
// DB that becomes unreachable without Close is flushed and closed by a
// cleanup, but the timing is up to the garbage collector. Slices passed to
// DB methods may be reused once the method returns; slices it returns
// belong to the caller.
type DB struct {
	d *db
}

// db is the state behind a DB. The background goroutine and the cleanup of
// an unreachable DB hold it, never the DB itself.
type db struct {
	log      OpLog
	opts     Options
	readOnly bool
	pinned   bool // opened at a fixed version
	wal      WAL
	snaps    SnapshotStore
	clock    clock
	cache    *valueCache

	// Lock order: flushMu, refreshMu, wmu, mu.
	flushMu   sync.Mutex // one commit or compaction at a time
	refreshMu sync.Mutex // one refresh at a time
	wmu       sync.Mutex // sequence numbers, WAL appends, pending
	mu        sync.RWMutex

	// Guarded by mu.
	v       *view
	seen    map[uint64]FragmentInfo // fragments applied to the view
	version uint64                  // newest version this handle committed or read
	synced  uint64                  // newest version whose every fragment is in seen
	dirty   bool                    // view differs from the loaded snapshot

	// Guarded by wmu.
	pending      []pendingRec
	pendingBytes int
	pbuf         pendBuf      // holds the records of pending written here
	spare        []pendingRec // an empty pending slice to reuse

	lastFlush   atomic.Int64 // unix ns
	lastRefresh atomic.Int64
	closed      atomic.Bool
	flushing    atomic.Bool // a commit of a full buffer is under way
}

type pendingRec struct {
	rec    []byte
	logged bool // in the WAL
}

// Open opens the database stored in log. See Options for read-only handles,
// time travel, the WAL and snapshots. With a WAL, Open replays the logs of
// abandoned writers and commits them.
func Open(ctx context.Context, log OpLog, o *Options) (*DB, error) {
	opts := o.withDefaults()
	d := &db{
		log:      log,
		opts:     opts,
		readOnly: opts.ReadOnly || opts.Version != 0,
		pinned:   opts.Version != 0,
		snaps:    opts.Snapshots,
		clock:    clock{now: opts.Now},
		cache:    newValueCache(opts.ValueCacheSize),
		v:        newViewAlloc(opts.Blocks),
		seen:     map[uint64]FragmentInfo{},
	}
	d.v.lk = &d.mu
	d.pbuf.alloc = d.v.alloc
	if !d.readOnly {
		d.wal = opts.WAL
	}
	version := opts.Version
	if version == 0 {
		var err error
		if version, err = log.Latest(ctx); err != nil {
			return nil, d.abort(ioErr("open", err))
		}
	}
	if err := d.load(ctx, version); err != nil {
		return nil, d.abort(err)
	}
	if d.wal != nil {
		if err := d.replay(ctx); err != nil {
			return nil, d.abort(err)
		}
	}
	now := d.opts.Now().UnixNano()
	d.lastFlush.Store(now)
	d.lastRefresh.Store(now)
	pub := &DB{d: d}
	runtime.AddCleanup(pub, func(d *db) { _ = d.close(context.Background()) }, d)
	register(pub)
	return pub, nil
}

func (d *db) abort(err error) error {
	if d.wal != nil {
		_ = d.wal.Close(false)
	}
	return err
}

// load builds the view of version: from the snapshot when it is usable,
// then the fragments it does not cover.
func (d *db) load(ctx context.Context, version uint64) error {
	d.version, d.synced = version, version
	if version == 0 {
		return nil
	}
	frags, err := d.log.Fragments(ctx, version)
	if err != nil {
		if d.pinned && errors.Is(err, store.ErrNotFound) {
			// The version asked for does not exist: not a storage failure.
			return fmt.Errorf("kv: open version %d: %w", version, err)
		}
		return ioErr("list fragments", err)
	}
	if s := d.loadSnapshot(frags); s != nil {
		d.v.release()
		d.v = s.view
		d.v.lk = &d.mu
		for _, f := range s.frags {
			d.seen[f.ID] = f
		}
	} else {
		d.dirty = true
	}
	var todo []uint64
	for _, f := range frags {
		if _, ok := d.seen[f.ID]; !ok {
			todo = append(todo, f.ID)
			d.seen[f.ID] = f
		}
	}
	if len(todo) > 0 {
		d.dirty = true
		if err := d.scan(ctx, version, todo); err != nil {
			return err
		}
	}
	d.clock.observe(d.v.max)
	return nil
}

// loadSnapshot returns the saved snapshot when every fragment it covers is
// in frags unchanged, and nil otherwise (any error included: a snapshot is
// only a cache).
func (d *db) loadSnapshot(frags []FragmentInfo) *snapshot {
	if d.snaps == nil {
		return nil
	}
	var data []byte
	var err error
	if m, ok := d.snaps.(SnapshotMapper); ok {
		var release func()
		data, release, err = m.MapSnapshot()
		if release != nil {
			defer release()
		}
	} else {
		data, err = d.snaps.LoadSnapshot()
	}
	if err != nil || data == nil {
		return nil
	}
	s, err := decodeSnapshotAlloc(data, "snapshot", d.v.alloc)
	if err != nil {
		return nil
	}
	if s.threshold != uint64(int64(d.opts.LazyValueThreshold)) {
		s.view.release()
		return nil
	}
	have := make(map[uint64]FragmentInfo, len(frags))
	for _, f := range frags {
		have[f.ID] = f
	}
	for _, f := range s.frags {
		if g, ok := have[f.ID]; !ok || g != f {
			s.view.release()
			return nil
		}
	}
	return s
}

// scan applies the rows of fragments of version to the view, one batch per
// lock so readers are not held up.
func (d *db) scan(ctx context.Context, version uint64, frags []uint64) error {
	return d.scanRows(ctx, version, frags, false)
}

// scanRows is scan; with onlyLazy it applies only the puts whose values
// stay in the log, for fragments whose rows the view already holds and
// whose committed values may have moved.
func (d *db) scanRows(ctx context.Context, version uint64, frags []uint64, onlyLazy bool) error {
	th := d.opts.LazyValueThreshold
	if th < 0 {
		th = int(^uint(0) >> 1)
	}
	keep := func(r *Row) bool { return !onlyLazy || (r.Op == OpPut && len(r.Value) > th) }
	err := d.log.ScanFragments(ctx, version, frags, func(batch []Row) error {
		i := 0
		for i < len(batch) && !keep(&batch[i]) {
			i++
		}
		if i == len(batch) {
			return nil
		}
		d.mu.Lock()
		for ; i < len(batch); i++ {
			if keep(&batch[i]) {
				d.v.applyRow(&batch[i], version, th)
			}
		}
		d.mu.Unlock()
		return nil
	})
	if err != nil {
		return ioErr("scan", err)
	}
	return nil
}

// replay applies the operations of abandoned writers' logs that no mark
// covers, moves them into this writer's log and commits them.
func (d *db) replay(ctx context.Context) error {
	type item struct {
		first, last uint64
		rec         []byte
	}
	var items []item
	stale := uint64(max(0, d.opts.Now().Add(-d.opts.MarkTTL).UnixNano()))
	d.mu.RLock()
	marks := maps(d.v.marks)
	d.mu.RUnlock()
	for _, l := range d.wal.Claimed() {
		mark, hasMark := marks[l.WriterID]
		for _, rec := range l.Records {
			first, last, ok := recordSpan(rec)
			if ok {
				if err := recordOps(rec, func(*Row) error { return nil }); err != nil {
					ok = false
				}
			}
			if !ok {
				return &CorruptionError{File: l.Dir, Offset: -1, Reason: "malformed key-value record"}
			}
			if hasMark && last <= mark {
				continue
			}
			if !hasMark && first < stale && !d.opts.ReplayStaleWAL {
				return fmt.Errorf("%w: %s holds operations older than the mark TTL from writer %q, whose mark is gone; move it away or set ReplayStaleWAL", ErrStaleWAL, l.Dir, l.WriterID)
			}
			items = append(items, item{first, last, rec})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	for _, it := range items {
		if err := d.wal.Append(it.rec); err != nil {
			return ioErr("wal append", err)
		}
		d.clock.observe(it.last)
		d.applyRecord(it.rec)
		d.pending = append(d.pending, pendingRec{rec: it.rec, logged: true})
		d.pendingBytes += len(it.rec)
	}
	if len(items) > 0 {
		if err := d.wal.Sync(); err != nil {
			return ioErr("wal sync", err)
		}
	}
	if err := d.wal.ReleaseClaimed(); err != nil {
		return ioErr("wal release", err)
	}
	if len(items) > 0 {
		// A failed commit keeps the operations pending (and in this
		// writer's log); the next flush retries.
		_ = d.flush(ctx)
	}
	return nil
}

func maps(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// applyRecord applies a well-formed record to the view. When merges lag
// behind, it returns a channel to wait on before writing more (see
// view.mergeBacklog); the caller waits without holding wmu.
func (d *db) applyRecord(rec []byte) <-chan struct{} {
	rd, err := newOpReader(rec)
	if err != nil {
		return nil
	}
	var r Row
	d.mu.Lock()
	for {
		if ok, _ := rd.next(&r); !ok {
			break
		}
		d.v.applyRow(&r, 0, 0)
	}
	d.dirty = true
	backlog := d.v.mergeBacklog()
	d.mu.Unlock()
	return backlog
}

// pendBuf keeps the records of the pending buffer back to back in large
// blocks from the DB's BlockAllocator (outside the Go heap with
// native/kvdb), so a write allocates nothing; a successful flush hands the
// blocks of the records it committed back for reuse. Guarded by wmu.
type pendBuf struct {
	alloc  BlockAllocator
	blocks [][]byte // in use; the last one is being filled
	used   int      // bytes used in the last block
	held   [][]byte // blocks of records a failed flush put back
	free   [][]byte // reusable
}

const (
	pendBlock = 1 << 20
	pendFree  = 2 // blocks kept for reuse
)

// copyIn returns a copy of rec in the buffer.
func (p *pendBuf) copyIn(rec []byte) []byte {
	n := len(p.blocks)
	if n == 0 || len(p.blocks[n-1])-p.used < len(rec) {
		var b []byte
		if len(rec) <= pendBlock && len(p.free) > 0 {
			b = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
		} else {
			b = p.alloc.Alloc(max(pendBlock, len(rec)))
		}
		p.blocks = append(p.blocks, b)
		p.used = 0
		n++
	}
	b := p.blocks[n-1]
	s := p.used
	p.used += copy(b[s:], rec)
	return b[s:p.used:p.used]
}

// take returns the blocks holding every pending record and starts new
// ones.
func (p *pendBuf) take() [][]byte {
	b := append(p.blocks, p.held...)
	p.blocks, p.used, p.held = nil, 0, nil
	return b
}

// putBack keeps blocks returned by take whose records went back to the
// pending buffer.
func (p *pendBuf) putBack(blocks [][]byte) { p.held = append(p.held, blocks...) }

// recycle takes back blocks returned by take; no record in them may be
// referenced any more.
func (p *pendBuf) recycle(blocks [][]byte) {
	for _, b := range blocks {
		if len(b) == pendBlock && len(p.free) < pendFree {
			p.free = append(p.free, b)
		} else {
			p.alloc.Free(b)
		}
	}
}

// release frees every block; the pending records are dropped.
func (p *pendBuf) release() {
	p.recycle(p.take())
	for _, b := range p.free {
		p.alloc.Free(b)
	}
	p.free = nil
}

// scratchPool recycles the buffers writes build their records in.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func (d *db) checkWritable() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if d.readOnly {
		return fmt.Errorf("%w: read-only handle", ErrNotSupported)
	}
	return nil
}

// write logs, applies and buffers one record holding count operations
// (its sequence number is filled in here).
func (d *db) write(ctx context.Context, rec []byte, count int, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	var wo WriteOptions
	if o != nil {
		wo = *o
	}
	logged := d.wal != nil && !wo.DisableWAL
	d.wmu.Lock()
	if d.closed.Load() {
		// Close has begun: it may already have released the buffer's
		// blocks, and nothing would commit this write.
		d.wmu.Unlock()
		return ErrClosed
	}
	rec = d.pbuf.copyIn(rec)
	binary.LittleEndian.PutUint64(rec[1:], d.clock.next(count))
	if logged {
		if err := d.wal.Append(rec); err != nil {
			d.wmu.Unlock()
			return ioErr("wal append", err)
		}
	}
	backlog := d.applyRecord(rec)
	if d.pending == nil && d.spare != nil {
		d.pending, d.spare = d.spare, nil
	}
	d.pending = append(d.pending, pendingRec{rec: rec, logged: logged})
	d.pendingBytes += len(rec)
	pendingBytes := d.pendingBytes
	full := pendingBytes >= d.opts.WriteBufferSize
	d.wmu.Unlock()
	if backlog != nil {
		<-backlog
	}
	if wo.Sync {
		return d.flush(ctx)
	}
	if full {
		d.flushFull(pendingBytes)
	}
	return nil
}

// flushFull commits a full buffer. The write that filled it is acknowledged
// either way (a failed commit keeps the operations pending for the next
// flush), so the commit runs on its own goroutine and the writer goes on,
// in parallel with the encoding and the I/O; only a writer that gets two
// buffers ahead of the commits waits for one.
func (d *db) flushFull(pending int) {
	if pending >= 2*d.opts.WriteBufferSize {
		if d.flushMu.TryLock() {
			_ = d.flushLocked(context.Background())
			d.flushMu.Unlock()
			return
		}
		// A commit is running: wait for it rather than let the buffer grow.
		d.flushMu.Lock()
		d.flushMu.Unlock()
		return
	}
	if !d.flushing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer d.flushing.Store(false)
		if d.flushMu.TryLock() {
			if !d.closed.Load() {
				_ = d.flushLocked(context.Background())
			}
			d.flushMu.Unlock()
		}
	}()
}

// appendRecordHeader appends the header of a record of count operations
// (its sequence number is filled in by write).
func appendRecordHeader(dst []byte, count int) []byte {
	dst = append(dst, RecordKind, 0, 0, 0, 0, 0, 0, 0, 0)
	return binary.AppendUvarint(dst, uint64(count))
}

// writeOne writes a record of one operation, built in a pooled buffer
// (write copies it).
func (d *db) writeOne(ctx context.Context, op Op, key, value []byte, o *WriteOptions) error {
	bp := scratchPool.Get().(*[]byte)
	rec := appendRecordHeader((*bp)[:0], 1)
	rec = appendOp(rec, op, key, value)
	err := d.write(ctx, rec, 1, o)
	if cap(rec) <= 64<<10 {
		*bp = rec[:0]
		scratchPool.Put(bp)
	}
	return err
}

// Put sets key to value. See WriteOptions for durability. The DB copies key
// and value.
func (db *DB) Put(ctx context.Context, key, value []byte, o *WriteOptions) error {
	return db.d.writeOne(ctx, OpPut, key, value, o)
}

// Delete deletes key. Deleting a missing key is not an error.
func (db *DB) Delete(ctx context.Context, key []byte, o *WriteOptions) error {
	return db.d.writeOne(ctx, OpDelete, key, nil, o)
}

// DeleteRange deletes every key in [start, end). A range with start >= end
// deletes nothing.
func (db *DB) DeleteRange(ctx context.Context, start, end []byte, o *WriteOptions) error {
	return db.d.writeOne(ctx, OpDeleteRange, start, end, o)
}

// NewBatch returns an empty batch for Write.
func (db *DB) NewBatch() *Batch { return &Batch{} }

// Write applies the operations of b atomically: local readers see all or
// none of them, and they are logged as one WAL record and committed in one
// commit. An empty batch is a no-op (with Sync it still flushes). The DB
// copies the batch; b may be reused after Write returns.
func (db *DB) Write(ctx context.Context, b *Batch, o *WriteOptions) error {
	if b == nil || b.count == 0 {
		if err := db.d.checkWritable(); err != nil {
			return err
		}
		if o != nil && o.Sync {
			return db.d.flush(ctx)
		}
		return nil
	}
	bp := scratchPool.Get().(*[]byte)
	rec := appendRecordHeader((*bp)[:0], b.count)
	rec = append(rec, b.repr...)
	err := db.d.write(ctx, rec, b.count, o)
	if cap(rec) <= 64<<10 {
		*bp = rec[:0]
		scratchPool.Put(bp)
	}
	return err
}

// Get returns a copy of the value of key, or an error matching ErrNotFound.
// It sees every write made through this handle, committed or not. Values
// kept in the log are read through the value cache.
func (db *DB) Get(ctx context.Context, key []byte) ([]byte, error) {
	d := db.d
	if d.closed.Load() {
		return nil, ErrClosed
	}
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		return nil, ErrClosed
	}
	e := d.v.lookup(key)
	if e == nil || entryKind(e) == kindTombstone {
		d.mu.RUnlock()
		return nil, ErrNotFound
	}
	p := entryPayload(e)
	if entryKind(e) == kindPut {
		v := append(make([]byte, 0, len(p)), p...)
		d.mu.RUnlock()
		return v, nil
	}
	loc, _ := decodeLazy(p)
	d.mu.RUnlock()
	vals, err := d.resolve(ctx, [][]byte{key}, []lazyLoc{loc})
	if err != nil {
		return nil, err
	}
	if vals[0] == nil {
		return nil, ErrNotFound
	}
	return vals[0], nil
}

// MultiGet returns the values of keys, in order: a copy of the value, or
// nil for a key with no value (an empty value is a non-nil empty slice).
// Values kept in the log are read with one request per version.
func (db *DB) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	d := db.d
	if d.closed.Load() {
		return nil, ErrClosed
	}
	out := make([][]byte, len(keys))
	var lk [][]byte
	var locs []lazyLoc
	var idx []int
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		return nil, ErrClosed
	}
	for i, k := range keys {
		e := d.v.lookup(k)
		if e == nil {
			continue
		}
		switch entryKind(e) {
		case kindPut:
			p := entryPayload(e)
			out[i] = append(make([]byte, 0, len(p)), p...)
		case kindLazy:
			l, _ := decodeLazy(entryPayload(e))
			lk, locs, idx = append(lk, k), append(locs, l), append(idx, i)
		}
	}
	d.mu.RUnlock()
	if len(locs) > 0 {
		vals, err := d.resolve(ctx, lk, locs)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = vals[j]
		}
	}
	return out, nil
}

// resolve reads values kept in the log and returns copies. When the version
// a location refers to is gone (compacted and cleaned up by another
// writer), it refreshes and resolves the keys again; a key deleted meanwhile
// then yields nil.
func (d *db) resolve(ctx context.Context, keys [][]byte, locs []lazyLoc) ([][]byte, error) {
	vals, err := d.cache.get(locs, d.fetcher(ctx))
	if err == nil {
		return copyAll(vals), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, ioErr("read value", err)
	}
	if err := d.refresh(ctx); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		d.mu.RLock()
		e := d.v.lookup(k)
		var inline []byte
		var loc lazyLoc
		kind := byte(kindTombstone)
		if e != nil {
			kind = entryKind(e)
			if kind == kindPut {
				inline = clone(entryPayload(e))
			} else if kind == kindLazy {
				loc, _ = decodeLazy(entryPayload(e))
			}
		}
		cur := d.version
		d.mu.RUnlock()
		switch kind {
		case kindPut:
			out[i] = inline
			continue
		case kindTombstone:
			continue
		}
		v, err := d.cache.get([]lazyLoc{loc}, d.fetcher(ctx))
		if err != nil && errors.Is(err, store.ErrNotFound) && cur != loc.version {
			loc.version = cur
			v, err = d.cache.get([]lazyLoc{loc}, d.fetcher(ctx))
		}
		if err != nil {
			return nil, ioErr("read value", err)
		}
		out[i] = clone(v[0])
	}
	return out, nil
}

func copyAll(vals [][]byte) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = append(make([]byte, 0, len(v)), v...)
	}
	return out
}

// fetcher returns the cache's miss handler: one Take per version.
func (d *db) fetcher(ctx context.Context) func([]lazyLoc) ([][]byte, error) {
	return func(miss []lazyLoc) ([][]byte, error) {
		out := make([][]byte, len(miss))
		done := make([]bool, len(miss))
		for i := range miss {
			if done[i] {
				continue
			}
			ver := miss[i].version
			var addrs []uint64
			var at []int
			for j := i; j < len(miss); j++ {
				if !done[j] && miss[j].version == ver {
					addrs = append(addrs, miss[j].addr)
					at = append(at, j)
					done[j] = true
				}
			}
			vals, err := d.log.Take(ctx, ver, addrs)
			if err != nil {
				return nil, err
			}
			if len(vals) != len(addrs) {
				return nil, errShortTake
			}
			for k, j := range at {
				if uint32(len(vals[k])) != miss[j].length {
					return nil, &CorruptionError{File: fmt.Sprintf("row %#x at version %d", miss[j].addr, ver), Offset: -1, Reason: "value length differs from the one scanned"}
				}
				out[j] = vals[k]
			}
		}
		return out, nil
	}
}

// Flush commits every buffered write to the log as one append and returns
// once it is committed. On failure the writes stay buffered (and in the
// WAL) and a later flush retries them.
func (db *DB) Flush(ctx context.Context) error {
	if db.d.closed.Load() {
		return ErrClosed
	}
	if db.d.readOnly {
		return nil
	}
	return db.d.flush(ctx)
}

func (d *db) flush(ctx context.Context) error {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	return d.flushLocked(ctx)
}

// flushLocked commits the pending buffer; the caller holds flushMu. After a
// successful commit it compacts when the log has too many fragments.
func (d *db) flushLocked(ctx context.Context) error {
	d.lastFlush.Store(d.opts.Now().UnixNano())
	d.wmu.Lock()
	recs := d.pending
	blocks := d.pbuf.take()
	d.pending, d.pendingBytes = nil, 0
	var token uint64
	rotated := false
	var mark uint64
	for _, r := range recs {
		if r.logged {
			_, last, _ := recordSpan(r.rec)
			mark = max(mark, last)
		}
	}
	if mark != 0 {
		var err error
		token, err = d.wal.Rotate()
		rotated = err == nil
	}
	d.wmu.Unlock()
	if len(recs) == 0 {
		if len(blocks) > 0 {
			d.wmu.Lock()
			d.pbuf.recycle(blocks)
			d.wmu.Unlock()
		}
		return nil
	}
	rows := make([]Row, 0, len(recs)+1)
	for _, r := range recs {
		rd, err := newOpReader(r.rec)
		if err != nil {
			continue
		}
		var row Row
		for {
			if ok, _ := rd.next(&row); !ok {
				break
			}
			rows = append(rows, row)
		}
	}
	var markBuf [binary.MaxVarintLen64]byte
	if mark != 0 {
		rows = append(rows, Row{Seq: mark, Op: OpMark, Key: []byte(d.wal.WriterID()), Value: AppendMark(markBuf[:0], mark)})
	}
	res, err := d.log.Append(ctx, rows)
	if err != nil {
		d.wmu.Lock()
		d.pbuf.putBack(blocks)
		d.pending = append(recs, d.pending...)
		for _, r := range recs {
			d.pendingBytes += len(r.rec)
		}
		d.wmu.Unlock()
		return ioErr("commit", err)
	}
	d.mu.Lock()
	if d.synced+1 == res.Version {
		d.synced = res.Version
	}
	d.version = max(d.version, res.Version)
	for _, f := range res.Added {
		d.seen[f.ID] = f
	}
	for _, id := range res.Removed {
		delete(d.seen, id)
	}
	if mark != 0 {
		w := d.wal.WriterID()
		d.v.marks[w] = max(d.v.marks[w], mark)
	}
	if th := d.opts.LazyValueThreshold; th >= 0 && len(res.Addrs) == len(rows) {
		for i := range rows {
			r := &rows[i]
			if r.Op != OpPut || len(r.Value) <= th {
				continue
			}
			if e := d.v.lookup(r.Key); e != nil && entrySeq(e) == r.Seq && entryKind(e) == kindPut {
				d.v.set(newLazy(r.Seq, r.Key, lazyLoc{version: res.Version, addr: res.Addrs[i], length: uint32(len(r.Value))}))
			}
		}
	}
	d.dirty = true
	d.mu.Unlock()
	// Nothing refers to the committed records any more: their blocks and
	// the pending slice can take new writes.
	clear(rows)
	d.wmu.Lock()
	d.pbuf.recycle(blocks)
	clear(recs)
	d.spare = recs[:0]
	d.wmu.Unlock()
	if rotated {
		// Deleting sealed segments can fail harmlessly: the mark just
		// committed makes replay skip them.
		_ = d.wal.Release(token)
	}
	_ = d.maybeCompact(ctx, false)
	return nil
}

// Refresh applies the commits other writers made since the handle last
// looked, reading only the fragments it has not seen. A handle opened at a
// fixed version does not move.
func (db *DB) Refresh(ctx context.Context) error {
	if db.d.closed.Load() {
		return ErrClosed
	}
	return db.d.refresh(ctx)
}

func (d *db) refresh(ctx context.Context) error {
	if d.pinned {
		return nil
	}
	d.refreshMu.Lock()
	defer d.refreshMu.Unlock()
	d.lastRefresh.Store(d.opts.Now().UnixNano())
	latest, err := d.log.Latest(ctx)
	if err != nil {
		return ioErr("refresh", err)
	}
	d.mu.RLock()
	synced := d.synced
	d.mu.RUnlock()
	if latest == synced {
		return nil
	}
	frags, err := d.log.Fragments(ctx, latest)
	if err != nil {
		return ioErr("refresh", err)
	}
	var todo []uint64
	present := make(map[uint64]bool, len(frags))
	d.mu.RLock()
	for _, f := range frags {
		present[f.ID] = true
		if g, ok := d.seen[f.ID]; !ok || g != f {
			todo = append(todo, f.ID)
		}
	}
	d.mu.RUnlock()
	if len(todo) > 0 {
		if err := d.scan(ctx, latest, todo); err != nil {
			return err
		}
	}
	d.mu.Lock()
	for id := range d.seen {
		if !present[id] {
			delete(d.seen, id)
		}
	}
	for _, f := range frags {
		d.seen[f.ID] = f
	}
	d.synced = max(d.synced, latest)
	d.version = max(d.version, latest)
	if len(todo) > 0 {
		d.dirty = true
	}
	max := d.v.max
	d.mu.Unlock()
	d.clock.observe(max)
	return nil
}

// CompactRange commits the buffer and rewrites the log as its live view
// (one Update commit that replaces every fragment the handle has read;
// fragments other writers append meanwhile are kept). Tombstones older
// than TombstoneGrace and marks older than MarkTTL are dropped. The range
// is advisory: the whole log is rewritten. It fails with ErrConflict when a
// concurrent compaction won.
func (db *DB) CompactRange(ctx context.Context, start, end []byte) error {
	d := db.d
	if err := d.checkWritable(); err != nil {
		return err
	}
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	if err := d.flushLocked(ctx); err != nil {
		return err
	}
	return d.maybeCompact(ctx, true)
}

// maybeCompact compacts after a flush (the caller holds flushMu) when the
// log has more than MaxFragments fragments, or always with force. It does
// nothing while the buffer holds operations, so it never commits a
// buffered operation.
func (d *db) maybeCompact(ctx context.Context, force bool) error {
	d.mu.RLock()
	nfrag := len(d.seen)
	d.mu.RUnlock()
	if !force && (d.opts.MaxFragments < 0 || nfrag <= d.opts.MaxFragments) {
		return nil
	}
	if err := d.refresh(ctx); err != nil {
		return err
	}
	d.wmu.Lock()
	d.mu.Lock()
	if len(d.pending) != 0 {
		d.mu.Unlock()
		d.wmu.Unlock()
		if force {
			return fmt.Errorf("%w: writes arrived during compaction; retry", ErrConflict)
		}
		return nil
	}
	var rows uint64
	for _, f := range d.seen {
		rows += f.Rows
	}
	live := d.v.live()
	readVersion := d.synced
	nfrag = len(d.seen)
	if readVersion == 0 {
		// Nothing was ever committed: there is nothing to compact.
		d.mu.Unlock()
		d.wmu.Unlock()
		return nil
	}
	var snap *view
	var remove []uint64
	if force || rows > 2*uint64(live)+1024 {
		snap = d.v.frozen()
		for id := range d.seen {
			remove = append(remove, id)
		}
		slices.Sort(remove)
	}
	d.mu.Unlock()
	d.wmu.Unlock()
	if snap == nil {
		return d.compactFiles(ctx)
	}
	defer snap.release()
	if !force && nfrag <= d.opts.MaxFragments {
		return nil
	}
	return d.materialize(ctx, readVersion, snap, remove)
}

func (d *db) materialize(ctx context.Context, readVersion uint64, snap *view, remove []uint64) error {
	now := d.opts.Now()
	cutoff := uint64(max(0, now.Add(-d.opts.TombstoneGrace).UnixNano()))
	markCutoff := uint64(max(0, now.Add(-d.opts.MarkTTL).UnixNano()))
	var written []Row // puts of values kept in the log, to relocate
	var writtenIdx []int
	n := 0
	rows := func(yield func(Row) bool) {
		snap.ascend(nil, func(e entry) bool {
			r := Row{Seq: entrySeq(e), Key: entryKey(e)}
			switch entryKind(e) {
			case kindTombstone:
				if r.Seq < cutoff {
					return true
				}
				r.Op = OpDelete
			case kindPut:
				r.Op, r.Value = OpPut, entryPayload(e)
			case kindLazy:
				l, _ := decodeLazy(entryPayload(e))
				r.Op, r.Lazy, r.Addr, r.ValueLen = OpPut, true, l.addr, l.length
			}
			if r.Op == OpPut && (r.Lazy || (d.opts.LazyValueThreshold >= 0 && len(r.Value) > d.opts.LazyValueThreshold)) {
				written = append(written, Row{Seq: r.Seq, Key: r.Key, ValueLen: uint32(len(r.Value)) | r.ValueLen})
				writtenIdx = append(writtenIdx, n)
			}
			n++
			return yield(r)
		})
		stop := false
		snap.dels.Ascend(func(s *span) bool {
			if s.seq < cutoff {
				return true
			}
			n++
			stop = !yield(Row{Seq: s.seq, Op: OpDeleteRange, Key: s.start, Value: s.end})
			return !stop
		})
		if stop {
			return
		}
		var buf [binary.MaxVarintLen64]byte
		ws := make([]string, 0, len(snap.marks))
		for w := range snap.marks {
			ws = append(ws, w)
		}
		slices.Sort(ws)
		for _, w := range ws {
			m := snap.marks[w]
			if m < markCutoff {
				continue
			}
			n++
			if !yield(Row{Seq: m, Op: OpMark, Key: []byte(w), Value: AppendMark(buf[:0], m)}) {
				return
			}
		}
	}
	res, err := d.log.Materialize(ctx, readVersion, rows, remove)
	if err != nil {
		return ioErr("materialize", err)
	}
	d.mu.Lock()
	for _, id := range res.Removed {
		delete(d.seen, id)
	}
	for _, f := range res.Added {
		d.seen[f.ID] = f
	}
	if d.synced == readVersion && res.Version == readVersion+1 {
		d.synced = res.Version
	}
	d.version = max(d.version, res.Version)
	if len(res.Addrs) == n {
		for j, r := range written {
			e := d.v.lookup(r.Key)
			if e != nil && entrySeq(e) == r.Seq && entryKind(e) != kindTombstone {
				d.v.set(newLazy(r.Seq, r.Key, lazyLoc{version: res.Version, addr: res.Addrs[writtenIdx[j]], length: r.ValueLen}))
			}
		}
	}
	d.v.gc(cutoff)
	for w, m := range d.v.marks {
		if m < markCutoff {
			delete(d.v.marks, w)
		}
	}
	d.dirty = true
	d.mu.Unlock()
	return nil
}

// compactFiles merges small fragments and rereads the merged ones so values
// kept in the log point at their new rows.
func (d *db) compactFiles(ctx context.Context) error {
	res, err := d.log.CompactFiles(ctx)
	if err != nil {
		return ioErr("compact files", err)
	}
	if res.Version == 0 {
		return nil
	}
	var ids []uint64
	for _, f := range res.Added {
		ids = append(ids, f.ID)
	}
	// The rewrite keeps rows as they are: when the handle had applied every
	// fragment it replaced, only values kept in the log need their new
	// addresses. Fragments of other writers not seen yet are read in full.
	seenAll := true
	d.mu.RLock()
	for _, id := range res.Removed {
		if _, ok := d.seen[id]; !ok {
			seenAll = false
		}
	}
	// Without lazy entries there is nothing to re-point: the rewritten
	// rows are already in the view.
	reread := !seenAll || d.v.mayHoldLazy()
	d.mu.RUnlock()
	if reread {
		if err := d.scanRows(ctx, res.Version, ids, seenAll); err != nil {
			return err
		}
	}
	d.mu.Lock()
	for _, id := range res.Removed {
		delete(d.seen, id)
	}
	for _, f := range res.Added {
		d.seen[f.ID] = f
	}
	if d.synced+1 == res.Version {
		// Nothing else committed in between: every fragment of the
		// rewrite's version is now seen.
		d.synced = res.Version
	}
	d.version = max(d.version, res.Version)
	d.dirty = true
	d.mu.Unlock()
	return nil
}

// Versions lists the stored versions of the log, oldest first.
func (db *DB) Versions(ctx context.Context) ([]VersionInfo, error) {
	if db.d.closed.Load() {
		return nil, ErrClosed
	}
	vs, err := db.d.log.Versions(ctx)
	return vs, ioErr("versions", err)
}

// CleanupOldVersions removes versions older than olderThan (never the
// latest) and returns how many it removed. Time travel to them stops
// working; handles reading values through them refresh and carry on.
func (db *DB) CleanupOldVersions(ctx context.Context, olderThan time.Duration) (int, error) {
	if err := db.d.checkWritable(); err != nil {
		return 0, err
	}
	n, err := db.d.log.CleanupOldVersions(ctx, olderThan)
	return n, ioErr("cleanup", err)
}

// Close commits the buffer, saves a snapshot when the view is large enough
// and closes the WAL. When the commit fails, Close still closes the handle
// and returns the error; the WAL keeps the writes for the next Open to
// replay. Close after Close returns ErrClosed.
func (db *DB) Close() error {
	return db.d.close(context.Background())
}

func (d *db) close(ctx context.Context) error {
	if !d.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	unregister(d)
	var err error
	if !d.readOnly {
		err = d.flush(ctx)
	}
	d.wmu.Lock()
	clean := err == nil && len(d.pending) == 0
	d.wmu.Unlock()
	if clean && !d.pinned && d.snaps != nil {
		d.mu.RLock()
		behind := d.version != d.synced
		d.mu.RUnlock()
		if behind {
			// A compaction or another writer's commit left versions
			// unseen: catch up so the snapshot can be saved.
			_ = d.refresh(ctx)
		}
		d.mu.RLock()
		if d.dirty && d.opts.SnapshotMinEntries >= 0 && d.v.atLeast(d.opts.SnapshotMinEntries) && d.version == d.synced {
			frags := make([]FragmentInfo, 0, len(d.seen))
			for _, f := range d.seen {
				frags = append(frags, f)
			}
			slices.SortFunc(frags, func(a, b FragmentInfo) int {
				if a.ID < b.ID {
					return -1
				}
				if a.ID > b.ID {
					return 1
				}
				return 0
			})
			threshold := uint64(int64(d.opts.LazyValueThreshold))
			var serr error
			if ss, ok := d.snaps.(SnapshotStreamer); ok {
				// Written as it is encoded, under the read lock: the
				// handle is closed, so only readers wait.
				serr = ss.StreamSnapshot(func(w io.Writer) error {
					return writeSnapshot(w, threshold, d.version, frags, d.v)
				})
				d.mu.RUnlock()
			} else {
				data := encodeSnapshot(nil, threshold, d.version, frags, d.v)
				d.mu.RUnlock()
				serr = d.snaps.SaveSnapshot(data)
			}
			if serr != nil && err == nil {
				err = ioErr("save snapshot", serr)
			}
		} else {
			d.mu.RUnlock()
		}
	}
	// Nothing reads the pending records after this (the WAL holds any
	// left uncommitted): their blocks go back.
	d.flushMu.Lock()
	d.wmu.Lock()
	d.pending, d.pendingBytes, d.spare = nil, 0, nil
	d.pbuf.release()
	d.wmu.Unlock()
	d.flushMu.Unlock()
	if d.wal != nil {
		if werr := d.wal.Close(clean); werr != nil && err == nil {
			err = ioErr("wal close", werr)
		}
	}
	// Give the view's memory back now rather than when the DB becomes
	// unreachable. Readers check closed under the lock, so none sees the
	// empty view.
	d.mu.Lock()
	old := d.v
	job := old.job
	d.v = newViewAlloc(old.alloc)
	d.v.lk = &d.mu
	old.release()
	d.mu.Unlock()
	if job != nil {
		// The release voided the running merge; it stops at its next
		// splice and drops the blocks it holds.
		<-job.done
	}
	return err
}

// tick is the background goroutine's periodic call: WAL sync in batch mode,
// interval flushes and refreshes.
func (d *db) tick(ctx context.Context, now int64) {
	if d.closed.Load() {
		return
	}
	if d.wal != nil {
		_ = d.wal.Sync()
	}
	if !d.readOnly && d.opts.FlushInterval > 0 && now-d.lastFlush.Load() >= int64(d.opts.FlushInterval) {
		d.wmu.Lock()
		n := len(d.pending)
		d.wmu.Unlock()
		if n > 0 && d.flushMu.TryLock() {
			if !d.closed.Load() {
				_ = d.flushLocked(ctx)
			}
			d.flushMu.Unlock()
		} else if n == 0 {
			d.lastFlush.Store(now)
		}
	}
	if !d.pinned && d.opts.RefreshInterval > 0 && now-d.lastRefresh.Load() >= int64(d.opts.RefreshInterval) {
		_ = d.refresh(ctx)
	}
}
