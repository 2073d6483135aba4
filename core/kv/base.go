package kv

import (
	"bytes"
	"encoding/binary"
	"runtime"
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
	// Alloc returns a zeroed block of n bytes.
	Alloc(n int) []byte
	// Free releases a block returned by Alloc.
	Free(b []byte)
}

type heapBlocks struct{}

func (heapBlocks) Alloc(n int) []byte { return make([]byte, n) }
func (heapBlocks) Free([]byte)        {}

// baseChunkSize is the size of one block of a base run.
const baseChunkSize = 1 << 20

// A baseRun is the immutable part of a view: every entry, sorted by key
// with unique keys, stored back to back in a few large blocks (one
// allocation per MiB instead of one per entry, and nothing for the garbage
// collector to scan). Each block holds its entries from the front and an
// index from the back, slot i at the i-th 12 bytes from the end:
//
//	+---------+---------+-----+-----------+-----+--------+--------+
//	| entry 0 | entry 1 | ... |  (free)   | ... | slot 1 | slot 0 |
//	+---------+---------+-----+-----------+-----+--------+--------+
//	slot := keyPrefix u64 LE | offset of the entry u32 LE
//
// A base run is shared by the view and the frozen copies compaction reads
// (refs counts them); its blocks are freed when the last one lets go. It is
// read under the DB's lock or through a reference, never written after
// it is built.
type baseRun struct {
	chunks []baseChunk
	n      int // entries
	live   int // put and lazy entries
	size   int64
	blocks *blockSet
	refs   atomic.Int32
}

const slotSize = 12

type baseChunk struct {
	data  []byte // the whole block
	used  int    // bytes of entries
	n     int    // entries
	p0    uint64 // prefix of the first key
	first []byte // key of the first entry
}

func (c *baseChunk) slot(i int) []byte {
	end := len(c.data) - i*slotSize
	return c.data[end-slotSize : end]
}

func (c *baseChunk) prefix(i int) uint64 { return binary.LittleEndian.Uint64(c.slot(i)) }

func (c *baseChunk) start(i int) int {
	return int(binary.LittleEndian.Uint32(c.slot(i)[8:]))
}

func (c *baseChunk) entry(i int) entry {
	s, e := c.start(i), c.used
	if i+1 < c.n {
		e = c.start(i + 1)
	}
	return c.data[s:e:e]
}

func (c *baseChunk) key(i int) []byte { return entryKey(c.data[c.start(i):c.used]) }

func (c *baseChunk) len() int { return c.n }

// search returns the index of the first entry whose key is >= key, and
// whether that key equals key.
func (c *baseChunk) search(kp uint64, key []byte) (int, bool) {
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

// blockSet owns the blocks of one base run. It is kept apart from the run
// so that a cleanup can free the blocks of a run nobody released.
type blockSet struct {
	alloc  BlockAllocator
	blocks [][]byte // nil once freed
}

func (s *blockSet) free(i int) {
	if b := s.blocks[i]; b != nil {
		s.blocks[i] = nil
		s.alloc.Free(b)
	}
}

func (s *blockSet) freeAll() {
	for i := range s.blocks {
		s.free(i)
	}
}

// unref drops one reference; the last frees the blocks.
func (b *baseRun) unref() {
	if b == nil {
		return
	}
	if b.refs.Add(-1) == 0 {
		b.blocks.freeAll()
		b.chunks = nil
	}
}

// baseBuilder appends sorted entries into a new base run.
type baseBuilder struct {
	run  *baseRun
	last []byte // key of the previous entry
}

func newBaseBuilder(alloc BlockAllocator) *baseBuilder {
	if alloc == nil {
		alloc = heapBlocks{}
	}
	r := &baseRun{blocks: &blockSet{alloc: alloc}}
	r.refs.Store(1)
	runtime.AddCleanup(r, func(s *blockSet) { s.freeAll() }, r.blocks)
	return &baseBuilder{run: r}
}

// add appends a copy of e, whose key must sort after the previous one's.
func (bb *baseBuilder) add(e entry) {
	r := bb.run
	n := len(r.chunks)
	if n == 0 || r.chunks[n-1].used+len(e)+(r.chunks[n-1].n+1)*slotSize > len(r.chunks[n-1].data) {
		size := max(baseChunkSize, len(e)+slotSize)
		blk := r.blocks.alloc.Alloc(size)
		r.blocks.blocks = append(r.blocks.blocks, blk)
		r.chunks = append(r.chunks, baseChunk{data: blk})
		n++
	}
	c := &r.chunks[n-1]
	start := c.used
	c.used += copy(c.data[start:], e)
	k := entryKey(c.data[start:c.used])
	kp := keyPrefix(k)
	sl := c.slot(c.n)
	binary.LittleEndian.PutUint64(sl, kp)
	binary.LittleEndian.PutUint32(sl[8:], uint32(start))
	if c.n == 0 {
		c.first, c.p0 = k, kp
	}
	c.n++
	r.n++
	if entryKind(e) != kindTombstone {
		r.live++
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
