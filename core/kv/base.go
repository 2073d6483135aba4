package kv

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"sync/atomic"
)

// BlockAllocator hands out the large pointer-free blocks that hold the
// view's base run (see view). Blocks are returned with Free exactly once,
// when no reader can touch them any more. Package native/kvdb supplies one
// that maps memory outside the Go heap, so the base run neither counts
// towards the garbage collector's heap goal nor waits for a collection to
// be reused; the default allocates from the Go heap.
//
// Implementations must be safe for concurrent use.
type BlockAllocator interface {
	// Alloc returns a block of n bytes. Its contents may be anything (a
	// reused block): the view writes every byte it reads.
	Alloc(n int) []byte
	// Free releases a block returned by Alloc.
	Free(b []byte)
}

type heapBlocks struct{}

func (heapBlocks) Alloc(n int) []byte { return make([]byte, n) }
func (heapBlocks) Free([]byte)        {}

// baseChunkSize is the size of one block of a base run (a variable so
// tests can make runs of many blocks).
var baseChunkSize = 1 << 20

// A block is one allocation from a BlockAllocator, shared by reference
// count: a base run, the frozen copies compaction reads and a background
// merge each hold a reference to the blocks they read. The last reference
// frees it; a block nobody released is freed by a cleanup when it becomes
// unreachable.
type block struct {
	data    []byte
	refs    atomic.Int32
	alloc   BlockAllocator
	cleanup runtime.Cleanup
}

type blockMem struct {
	alloc BlockAllocator
	data  []byte
}

func newBlock(a BlockAllocator, n int) *block {
	b := &block{data: a.Alloc(n), alloc: a}
	b.refs.Store(1)
	if _, heap := a.(heapBlocks); !heap {
		b.cleanup = runtime.AddCleanup(b, func(m blockMem) { m.alloc.Free(m.data) }, blockMem{a, b.data})
	}
	return b
}

func (b *block) ref() { b.refs.Add(1) }

func (b *block) unref() {
	if n := b.refs.Add(-1); n == 0 {
		b.cleanup.Stop()
		b.alloc.Free(b.data)
		b.data = nil
	} else if n < 0 {
		panic("kv: block released twice")
	}
}

// A baseRun is the immutable part of a view: entries sorted by key with
// unique keys, stored back to back in large blocks (one allocation per MiB
// instead of one per entry, and nothing for the garbage collector to
// scan). Each block holds its entries from the front and an index from the
// back, slot i at the i-th 8 bytes from the end:
//
//	+---------+---------+-----+-----------+-----+--------+--------+
//	| entry 0 | entry 1 | ... |  (free)   | ... | slot 1 | slot 0 |
//	+---------+---------+-----+-----------+-----+--------+--------+
//	slot := u64 LE: the key's prefix (keyPrefix) with its low 24 bits
//	        replaced by the entry's offset in the block
//
// A binary search compares the 40 prefix bits and reads a key only when
// they tie. Offsets must stay below 16 MiB: a block is 1 MiB unless it is
// made for one larger entry, and a block whose entries reach 16 MiB takes
// no more.
//
// A run holds one reference to each of its blocks; runs that share blocks
// (a view's run after a partial merge, frozen copies) hold their own. A run
// is read under the DB's lock or by the holder of a copy, and never written
// after it is built.
type baseRun struct {
	chunks []baseChunk
	n      int // entries
	live   int // put and lazy entries
	lazy   int // lazy entries
	size   int64
}

const (
	slotSize = 8
	offBits  = 24
	offMask  = 1<<offBits - 1
)

type baseChunk struct {
	blk   *block
	data  []byte // the whole block
	used  int    // bytes of entries
	n     int    // entries
	live  int    // put and lazy entries
	lazy  int    // lazy entries
	p0    uint64 // prefix of the first key
	first []byte // key of the first entry
}

func (c *baseChunk) slot(i int) []byte {
	end := len(c.data) - i*slotSize
	return c.data[end-slotSize : end]
}

// prefix returns the stored prefix of entry i: its key's prefix with the
// low offBits cleared (compare with cut(keyPrefix(key))).
func (c *baseChunk) prefix(i int) uint64 { return binary.LittleEndian.Uint64(c.slot(i)) &^ offMask }

func (c *baseChunk) start(i int) int {
	return int(binary.LittleEndian.Uint64(c.slot(i)) & offMask)
}

// cut clears the bits of a key prefix that a slot does not keep.
func cut(kp uint64) uint64 { return kp &^ offMask }

func (c *baseChunk) entry(i int) entry {
	s, e := c.start(i), c.used
	if i+1 < c.n {
		e = c.start(i + 1)
	}
	return c.data[s:e:e]
}

func (c *baseChunk) key(i int) []byte { return entryKey(c.data[c.start(i):c.used]) }

func (c *baseChunk) len() int { return c.n }

// nearlyFull reports whether at most an eighth of the block is free.
func (c *baseChunk) nearlyFull() bool {
	return 8*(len(c.data)-c.used-c.n*slotSize) <= len(c.data)
}

// search returns the index of the first entry whose key is >= key, and
// whether that key equals key.
func (c *baseChunk) search(kp uint64, key []byte) (int, bool) {
	kp = cut(kp)
	i, j := 0, c.n
	for i < j {
		m := int(uint(i+j) >> 1)
		if p := c.prefix(m); p < kp || (p == kp && bytes.Compare(c.key(m), key) < 0) {
			i = m + 1
		} else {
			j = m
		}
	}
	return i, i < c.n && c.prefix(i) == kp && bytes.Equal(c.key(i), key)
}

// chunkFor returns the index of the last chunk whose first key is <= key,
// or -1.
func (b *baseRun) chunkFor(kp uint64, key []byte) int {
	lo, hi := 0, len(b.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := &b.chunks[m]
		if p := c.p0; p < kp || (p == kp && bytes.Compare(c.first, key) <= 0) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// release drops the run's references to its blocks.
func (b *baseRun) release() {
	if b == nil {
		return
	}
	for i := range b.chunks {
		b.chunks[i].blk.unref()
	}
	b.chunks = nil
	b.n, b.live, b.lazy, b.size = 0, 0, 0, 0
}

// clone returns a run sharing b's blocks, with references of its own.
func (b *baseRun) clone() *baseRun {
	if b == nil {
		return &baseRun{}
	}
	c := &baseRun{chunks: slices.Clone(b.chunks), n: b.n, live: b.live, lazy: b.lazy, size: b.size}
	for i := range c.chunks {
		c.chunks[i].blk.ref()
	}
	return c
}

// splice returns a run that is b with its chunks [at, at+n) replaced by
// repl. The new run takes over b's references except those of the
// replaced chunks, which are returned for the caller to drop, and repl's.
func (b *baseRun) splice(at, n int, repl []baseChunk) (*baseRun, []baseChunk) {
	old := b.chunks[at : at+n]
	r := &baseRun{n: b.n, live: b.live, lazy: b.lazy, size: b.size}
	r.chunks = make([]baseChunk, 0, len(b.chunks)-n+len(repl))
	r.chunks = append(r.chunks, b.chunks[:at]...)
	r.chunks = append(r.chunks, repl...)
	r.chunks = append(r.chunks, b.chunks[at+n:]...)
	for i := range old {
		r.n -= old[i].n
		r.live -= old[i].live
		r.lazy -= old[i].lazy
		r.size -= int64(old[i].used)
	}
	for i := range repl {
		r.n += repl[i].n
		r.live += repl[i].live
		r.lazy += repl[i].lazy
		r.size += int64(repl[i].used)
	}
	return r, slices.Clone(old)
}

// baseBuilder appends sorted entries into a new base run.
type baseBuilder struct {
	run   *baseRun
	alloc BlockAllocator
	last  []byte // key of the previous entry
}

func newBaseBuilder(alloc BlockAllocator) *baseBuilder {
	if alloc == nil {
		alloc = heapBlocks{}
	}
	return &baseBuilder{run: &baseRun{}, alloc: alloc}
}

// add appends a copy of e, whose key must sort after the previous one's.
func (bb *baseBuilder) add(e entry) {
	r := bb.run
	n := len(r.chunks)
	if n == 0 || r.chunks[n-1].used+len(e)+(r.chunks[n-1].n+1)*slotSize > len(r.chunks[n-1].data) || r.chunks[n-1].used > offMask {
		size := max(baseChunkSize, len(e)+slotSize)
		blk := newBlock(bb.alloc, size)
		r.chunks = append(r.chunks, baseChunk{blk: blk, data: blk.data})
		n++
	}
	c := &r.chunks[n-1]
	start := c.used
	c.used += copy(c.data[start:], e)
	k := entryKey(c.data[start:c.used])
	kp := keyPrefix(k)
	binary.LittleEndian.PutUint64(c.slot(c.n), cut(kp)|uint64(start))
	if c.n == 0 {
		c.first, c.p0 = k, kp
	}
	c.n++
	r.n++
	if entryKind(e) != kindTombstone {
		r.live++
		c.live++
	}
	if entryKind(e) == kindLazy {
		r.lazy++
		c.lazy++
	}
	r.size += int64(len(e))
	bb.last = k
}

// sorted reports whether key sorts strictly after the previous entry's.
func (bb *baseBuilder) sorted(key []byte) bool {
	return bb.run.n == 0 || bytes.Compare(bb.last, key) < 0
}

func (bb *baseBuilder) finish() *baseRun { return bb.run }

// baseCursor is a position in a base run: chunk ci, entry ei.
type baseCursor struct {
	b      *baseRun
	ci, ei int
}

func (c *baseCursor) valid() bool { return c.b != nil && c.ci >= 0 && c.ci < len(c.b.chunks) }

func (c *baseCursor) entry() entry { return c.b.chunks[c.ci].entry(c.ei) }

func (c *baseCursor) next() {
	c.ei++
	if c.ei >= c.b.chunks[c.ci].len() {
		c.ci++
		c.ei = 0
	}
}

func (c *baseCursor) prev() {
	c.ei--
	if c.ei < 0 {
		c.ci--
		if c.ci >= 0 {
			c.ei = c.b.chunks[c.ci].len() - 1
		}
	}
}

// first returns a cursor at the first entry.
func (b *baseRun) first() baseCursor { return baseCursor{b: b} }

// last returns a cursor at the last entry.
func (b *baseRun) last() baseCursor {
	if b == nil || len(b.chunks) == 0 {
		return baseCursor{b: b, ci: -1}
	}
	ci := len(b.chunks) - 1
	return baseCursor{b: b, ci: ci, ei: b.chunks[ci].len() - 1}
}

// seekGE returns a cursor at the first entry whose key is >= key.
func (b *baseRun) seekGE(key []byte) baseCursor {
	if b == nil {
		return baseCursor{}
	}
	kp := keyPrefix(key)
	ci := b.chunkFor(kp, key)
	if ci < 0 {
		return baseCursor{b: b}
	}
	c := &b.chunks[ci]
	ei, _ := c.search(kp, key)
	cur := baseCursor{b: b, ci: ci, ei: ei}
	if ei >= c.len() {
		cur.ci, cur.ei = ci+1, 0
	}
	return cur
}

// seekLE returns a cursor at the last entry whose key is <= key.
func (b *baseRun) seekLE(key []byte) baseCursor {
	if b == nil {
		return baseCursor{ci: -1}
	}
	cur := b.seekGE(key)
	if cur.valid() && bytes.Equal(entryKey(cur.entry()), key) {
		return cur
	}
	if !cur.valid() {
		return b.last()
	}
	cur.prev()
	return cur
}

// get returns the entry for key, or nil.
func (b *baseRun) get(key []byte) entry {
	if b == nil || len(b.chunks) == 0 {
		return nil
	}
	kp := keyPrefix(key)
	ci := b.chunkFor(kp, key)
	if ci < 0 {
		return nil
	}
	c := &b.chunks[ci]
	if i, ok := c.search(kp, key); ok {
		return c.entry(i)
	}
	return nil
}
