package kv

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
)

// A delta holds the entries a view changed since its base run was built,
// in key order, until a merge folds them into a new base.
//
// Entries are copied back to back into an arena of large blocks (no
// allocation per entry, nothing for the garbage collector to scan), each
// behind a 4-byte length. A B+tree orders them: a leaf holds up to leafCap
// items, each the key's 8-byte prefix and the entry's arena reference, in
// two flat arrays that a binary search walks without touching the arena
// unless prefixes tie. Replacing a key's entry appends the new entry and
// repoints the item; the old bytes stay in the arena until the delta is
// dropped. Nothing is ever removed from the tree (a view hides a key with
// an absent entry), so leaves are never empty except the first leaf of an
// empty delta.
//
// A delta is written only while it is a view's active delta, under the
// DB's write lock. Once frozen it is immutable and may be read by
// holders of a reference (refs) without the lock; the last reference frees
// the arena.
type delta struct {
	root   *inner
	head   *leaf
	tail   *leaf
	n      int // items
	live   int // put and lazy items (approximate: shadowing is ignored)
	lazy   int // lazy items (as live)
	alloc  BlockAllocator
	blocks []*block
	cur    []byte // data of the last block
	used   int    // bytes used in cur
	refs   atomic.Int32
}

const (
	leafCap    = 64
	innerCap   = 64
	arenaBlock = 1 << 20
)

type leaf struct {
	next, prev *leaf
	n          int
	pfx        [leafCap]uint64
	ref        [leafCap]uint64
}

// inner is an interior node. Child i holds the keys from its separator
// (pfx[i], ref[i]) up to the next child's; child 0's separator is unused.
type inner struct {
	n        int
	leafKids bool
	kids     [innerCap]*inner
	leaves   [innerCap]*leaf
	pfx      [innerCap]uint64
	ref      [innerCap]uint64
}

func newDelta(a BlockAllocator) *delta {
	if a == nil {
		a = heapBlocks{}
	}
	lf := &leaf{}
	d := &delta{root: &inner{n: 1, leafKids: true}, head: lf, tail: lf, alloc: a}
	d.root.leaves[0] = lf
	d.refs.Store(1)
	return d
}

// unref drops one reference; the last frees the arena.
func (d *delta) unref() {
	if d == nil {
		return
	}
	if n := d.refs.Add(-1); n == 0 {
		for _, b := range d.blocks {
			b.unref()
		}
		d.blocks, d.cur = nil, nil
	} else if n < 0 {
		panic("kv: delta released twice")
	}
}

// entry returns the entry at arena reference r.
func (d *delta) entry(r uint64) entry {
	b := d.blocks[r>>32].data
	off := int(uint32(r))
	n := int(binary.LittleEndian.Uint32(b[off:]))
	return b[off+4 : off+4+n : off+4+n]
}

// reserve returns room for an entry of n bytes in the arena and its
// reference.
func (d *delta) reserve(n int) ([]byte, uint64) {
	if d.cur == nil || d.used+4+n > len(d.cur) {
		blk := newBlock(d.alloc, max(arenaBlock, 4+n))
		d.blocks = append(d.blocks, blk)
		d.cur, d.used = blk.data, 0
	}
	off := d.used
	binary.LittleEndian.PutUint32(d.cur[off:], uint32(n))
	d.used += 4 + n
	return d.cur[off+4 : off+4+n : off+4+n], uint64(len(d.blocks)-1)<<32 | uint64(off)
}

// cmpItem compares the item (p, r) with key, whose prefix is kp.
func (d *delta) cmpItem(p, r, kp uint64, key []byte) int {
	if p != kp {
		if p < kp {
			return -1
		}
		return 1
	}
	return bytes.Compare(entryKey(d.entry(r)), key)
}

// route returns the child of nd that holds key.
func (d *delta) route(nd *inner, kp uint64, key []byte) int {
	// The first separator > key, minus one.
	i, j := 1, nd.n
	for i < j {
		m := int(uint(i+j) >> 1)
		if d.cmpItem(nd.pfx[m], nd.ref[m], kp, key) <= 0 {
			i = m + 1
		} else {
			j = m
		}
	}
	return i - 1
}

// lowerBound returns the index of the first item of lf >= key and whether
// it equals key.
func (d *delta) lowerBound(lf *leaf, kp uint64, key []byte) (int, bool) {
	i, j := 0, lf.n
	for i < j {
		m := int(uint(i+j) >> 1)
		if p := lf.pfx[m]; p < kp {
			i = m + 1
		} else if p > kp {
			j = m
		} else if bytes.Compare(entryKey(d.entry(lf.ref[m])), key) < 0 {
			i = m + 1
		} else {
			j = m
		}
	}
	return i, i < lf.n && lf.pfx[i] == kp && bytes.Equal(entryKey(d.entry(lf.ref[i])), key)
}

// findLeaf returns the leaf that holds key.
func (d *delta) findLeaf(kp uint64, key []byte) *leaf {
	nd := d.root
	for {
		i := d.route(nd, kp, key)
		if nd.leafKids {
			return nd.leaves[i]
		}
		nd = nd.kids[i]
	}
}

// get returns the entry for key, or nil.
func (d *delta) get(key []byte) entry {
	if d.n == 0 {
		return nil
	}
	kp := keyPrefix(key)
	lf := d.findLeaf(kp, key)
	if i, ok := d.lowerBound(lf, kp, key); ok {
		return d.entry(lf.ref[i])
	}
	return nil
}

// insert points key (prefix kp) at arena reference r, replacing the
// key's item if there is one; it returns the replaced reference.
func (d *delta) insert(kp uint64, key []byte, r uint64) (uint64, bool) {
	if d.root.n == innerCap {
		nr := &inner{n: 1}
		nr.kids[0] = d.root
		d.root = nr
		d.splitInner(nr, 0)
	}
	nd := d.root
	for {
		i := d.route(nd, kp, key)
		if nd.leafKids {
			lf := nd.leaves[i]
			if lf.n == leafCap {
				d.splitLeaf(nd, i)
				if d.cmpItem(nd.pfx[i+1], nd.ref[i+1], kp, key) <= 0 {
					lf = nd.leaves[i+1]
				}
			}
			j, found := d.lowerBound(lf, kp, key)
			if found {
				old := lf.ref[j]
				lf.ref[j] = r
				return old, true
			}
			copy(lf.pfx[j+1:lf.n+1], lf.pfx[j:lf.n])
			copy(lf.ref[j+1:lf.n+1], lf.ref[j:lf.n])
			lf.pfx[j], lf.ref[j] = kp, r
			lf.n++
			d.n++
			return 0, false
		}
		if nd.kids[i].n == innerCap {
			d.splitInner(nd, i)
			if d.cmpItem(nd.pfx[i+1], nd.ref[i+1], kp, key) <= 0 {
				i++
			}
		}
		nd = nd.kids[i]
	}
}

// insertChild makes room at i+1 in nd (not full) for a child with
// separator (p, r).
func insertSep(nd *inner, i int, p, r uint64) {
	copy(nd.pfx[i+2:nd.n+1], nd.pfx[i+1:nd.n])
	copy(nd.ref[i+2:nd.n+1], nd.ref[i+1:nd.n])
	copy(nd.kids[i+2:nd.n+1], nd.kids[i+1:nd.n])
	copy(nd.leaves[i+2:nd.n+1], nd.leaves[i+1:nd.n])
	nd.pfx[i+1], nd.ref[i+1] = p, r
	nd.n++
}

// splitLeaf splits the full leaf nd.leaves[i] in two halves.
func (d *delta) splitLeaf(nd *inner, i int) {
	l := nd.leaves[i]
	h := l.n / 2
	r := &leaf{n: l.n - h, prev: l, next: l.next}
	copy(r.pfx[:], l.pfx[h:l.n])
	copy(r.ref[:], l.ref[h:l.n])
	l.n = h
	if l.next != nil {
		l.next.prev = r
	} else {
		d.tail = r
	}
	l.next = r
	insertSep(nd, i, r.pfx[0], r.ref[0])
	nd.leaves[i+1] = r
}

// splitInner splits the full node nd.kids[i] in two halves.
func (d *delta) splitInner(nd *inner, i int) {
	l := nd.kids[i]
	h := l.n / 2
	r := &inner{n: l.n - h, leafKids: l.leafKids}
	copy(r.pfx[:], l.pfx[h:l.n])
	copy(r.ref[:], l.ref[h:l.n])
	copy(r.kids[:], l.kids[h:l.n])
	copy(r.leaves[:], l.leaves[h:l.n])
	clear(l.kids[h:l.n])
	clear(l.leaves[h:l.n])
	l.n = h
	insertSep(nd, i, r.pfx[0], r.ref[0])
	nd.kids[i+1] = r
}

// set stores a copy of e, replacing any entry with its key. It returns
// the replaced entry (valid until the delta is dropped), or nil.
func (d *delta) set(e entry) entry {
	dst, r := d.reserve(len(e))
	copy(dst, e)
	return d.setRef(dst, r)
}

// setRef points dst's key at reference r, whose bytes dst already are.
func (d *delta) setRef(dst entry, r uint64) entry {
	k := entryKey(dst)
	var old entry
	if o, ok := d.insert(keyPrefix(k), k, r); ok {
		old = d.entry(o)
		if entryKind(old) != kindTombstone && entryKind(old) != kindAbsent {
			d.live--
		}
		if entryKind(old) == kindLazy {
			d.lazy--
		}
	}
	if entryKind(dst) != kindTombstone && entryKind(dst) != kindAbsent {
		d.live++
	}
	if entryKind(dst) == kindLazy {
		d.lazy++
	}
	return old
}

// setPut stores a put entry without building it first.
func (d *delta) setPut(seq uint64, key, value []byte) {
	kl := len(key)
	dst, r := d.reserve(entryHeader + uvarintLen(uint64(kl)) + kl + len(value))
	binary.LittleEndian.PutUint64(dst, seq)
	dst[8] = kindPut
	i := entryHeader + binary.PutUvarint(dst[entryHeader:], uint64(kl))
	i += copy(dst[i:], key)
	copy(dst[i:], value)
	d.setRef(dst, r)
}

// dcursor is a position in a delta: item i of leaf lf (nil: off either
// end).
type dcursor struct {
	d  *delta
	lf *leaf
	i  int
}

func (c *dcursor) valid() bool { return c.lf != nil }

func (c *dcursor) item() (uint64, entry) {
	return c.lf.pfx[c.i], c.d.entry(c.lf.ref[c.i])
}

// skipFwd moves past the end of empty leaves.
func (c *dcursor) skipFwd() {
	for c.lf != nil && c.i >= c.lf.n {
		c.lf, c.i = c.lf.next, 0
	}
}

func (c *dcursor) skipBack() {
	for c.lf != nil && c.i < 0 {
		c.lf = c.lf.prev
		if c.lf != nil {
			c.i = c.lf.n - 1
		}
	}
}

func (c *dcursor) next() { c.i++; c.skipFwd() }
func (c *dcursor) prev() { c.i--; c.skipBack() }

// seekGE returns a cursor at the first item >= key (the first item when key
// is nil).
func (d *delta) seekGE(key []byte) dcursor {
	c := dcursor{d: d, lf: d.head}
	if key != nil && d.n > 0 {
		kp := keyPrefix(key)
		c.lf = d.findLeaf(kp, key)
		c.i, _ = d.lowerBound(c.lf, kp, key)
	}
	c.skipFwd()
	return c
}

// seekLE returns a cursor at the last item <= key (the last item when key
// is nil).
func (d *delta) seekLE(key []byte) dcursor {
	c := dcursor{d: d, lf: d.tail, i: d.tail.n - 1}
	if key != nil && d.n > 0 {
		kp := keyPrefix(key)
		c.lf = d.findLeaf(kp, key)
		i, ok := d.lowerBound(c.lf, kp, key)
		if !ok {
			i--
		}
		c.i = i
	}
	c.skipBack()
	return c
}
