package kv

import (
	"bytes"

	"github.com/google/btree"
)

// view is the in-memory ordered view of a database: point entries (puts,
// lazy puts and point tombstones) in two layers, range tombstones in a
// B-tree of disjoint spans, and the WAL marks seen.
//
// The point entries live in an immutable sorted base run (see baseRun) and
// a B-tree of newer changes, the delta, whose entries shadow the base's
// (an absent entry in the delta hides a base entry the view dropped). When
// the delta grows past a fraction of the base, merge folds it into a new
// base. Reads look in the delta, then the base; ordered walks merge both.
//
// Applying rows is idempotent and order-independent: a row loses to an
// entry with a newer seq, and to a covering range tombstone with a newer or
// equal seq. At equal seqs a tombstone beats a put. The view is not safe for
// concurrent use; DB guards it with its mutex.
type view struct {
	base    *baseRun
	tree    *btree.BTreeG[item] // the delta
	dels    *btree.BTreeG[*span]
	live    int               // put entries (live keys), approximate between merges
	marks   map[string]uint64 // writer id -> highest committed seq
	max     uint64            // highest seq seen
	bytes   int64             // bytes held by delta entries (approximate)
	alloc   BlockAllocator
	mergeAt int // delta size that triggers a merge
}

// span is a fragment of the range-tombstone set: [start, end) deleted at
// seq. Spans in a view never overlap.
type span struct {
	start, end []byte
	seq        uint64
}

func spanLess(a, b *span) bool { return bytes.Compare(a.start, b.start) < 0 }

const btreeDegree = 32

// mergeMinEntries is the smallest delta that is merged into the base;
// mergeDiv makes the delta merge once it holds base/mergeDiv entries.
// Tests lower mergeMinEntries to exercise the base.
var (
	mergeMinEntries = 1 << 16
	mergeDiv        = 8
)

func newView() *view { return newViewAlloc(nil) }

func newViewAlloc(a BlockAllocator) *view {
	if a == nil {
		a = heapBlocks{}
	}
	return &view{
		tree:    btree.NewG[item](btreeDegree, itemLess),
		dels:    btree.NewG[*span](8, spanLess),
		marks:   make(map[string]uint64),
		alloc:   a,
		mergeAt: mergeMinEntries,
	}
}

func (v *view) observe(seq uint64) {
	if seq > v.max {
		v.max = seq
	}
}

// lookup returns the entry for key, or nil.
func (v *view) lookup(key []byte) entry {
	if v.tree.Len() > 0 {
		p := getProbe(key)
		it, ok := v.tree.Get(item{keyPrefix(key), *p})
		putProbe(p)
		if ok {
			if entryKind(it.e) == kindAbsent {
				return nil
			}
			return it.e
		}
	}
	return v.base.get(key)
}

// atLeast reports whether the view holds at least n entries (tombstones
// included).
func (v *view) atLeast(n int) bool {
	c := 0
	v.ascend(nil, func(entry) bool { c++; return c < n })
	return c >= n
}

// ascend calls fn on the entries with keys >= from (every entry when from
// is nil) in ascending order until fn returns false.
func (v *view) ascend(from []byte, fn func(entry) bool) {
	var c baseCursor
	if from == nil {
		c = v.base.first()
	} else {
		c = v.base.seekGE(from)
	}
	stop := false
	visit := func(it item) bool {
		d := it.e
		dk := entryKey(d)
		for c.valid() {
			be := c.entry()
			cmp := bytes.Compare(entryKey(be), dk)
			if cmp > 0 {
				break
			}
			c.next()
			if cmp == 0 {
				break
			}
			if !fn(be) {
				stop = true
				return false
			}
		}
		if entryKind(d) == kindAbsent {
			return true
		}
		if !fn(d) {
			stop = true
			return false
		}
		return true
	}
	if v.tree.Len() > 0 {
		if from == nil {
			v.tree.Ascend(visit)
		} else {
			p := getProbe(from)
			v.tree.AscendGreaterOrEqual(item{keyPrefix(from), *p}, visit)
			putProbe(p)
		}
	}
	if stop {
		return
	}
	for ; c.valid(); c.next() {
		if !fn(c.entry()) {
			return
		}
	}
}

// descend calls fn on the entries with keys <= from (every entry when from
// is nil) in descending order until fn returns false.
func (v *view) descend(from []byte, fn func(entry) bool) {
	var c baseCursor
	if from == nil {
		c = v.base.last()
	} else {
		c = v.base.seekLE(from)
	}
	stop := false
	visit := func(it item) bool {
		d := it.e
		dk := entryKey(d)
		for c.valid() {
			be := c.entry()
			cmp := bytes.Compare(entryKey(be), dk)
			if cmp < 0 {
				break
			}
			c.prev()
			if cmp == 0 {
				break
			}
			if !fn(be) {
				stop = true
				return false
			}
		}
		if entryKind(d) == kindAbsent {
			return true
		}
		if !fn(d) {
			stop = true
			return false
		}
		return true
	}
	if v.tree.Len() > 0 {
		if from == nil {
			v.tree.Descend(visit)
		} else {
			p := getProbe(from)
			v.tree.DescendLessOrEqual(item{keyPrefix(from), *p}, visit)
			putProbe(p)
		}
	}
	if stop {
		return
	}
	for ; c.valid(); c.prev() {
		if !fn(c.entry()) {
			return
		}
	}
}

// covered returns the seq of the range tombstone covering key, or 0.
func (v *view) covered(key []byte) uint64 {
	if v.dels.Len() == 0 {
		return 0
	}
	var seq uint64
	v.dels.DescendLessOrEqual(&span{start: key}, func(s *span) bool {
		if bytes.Compare(key, s.end) < 0 {
			seq = s.seq
		}
		return false
	})
	return seq
}

// set stores e in the delta, replacing any entry with its key, keeps the
// counters and merges the delta into the base when it has grown enough.
func (v *view) set(e entry) {
	old, had := v.tree.ReplaceOrInsert(item{keyPrefix(entryKey(e)), e})
	if had {
		v.account(old.e, -1)
	}
	v.account(e, 1)
	v.maybeMerge()
}

// setNoMerge is set without the merge, for callers holding base entries.
func (v *view) setNoMerge(e entry) {
	old, had := v.tree.ReplaceOrInsert(item{keyPrefix(entryKey(e)), e})
	if had {
		v.account(old.e, -1)
	}
	v.account(e, 1)
}

func (v *view) maybeMerge() {
	if v.tree.Len() >= v.mergeAt {
		v.merge(nil)
	}
}

func (v *view) account(e entry, sign int) {
	if k := entryKind(e); k != kindTombstone && k != kindAbsent {
		v.live += sign
	}
	v.bytes += int64(sign) * int64(len(e)+48)
}

// merge folds the delta into a new base run, leaving out the entries drop
// reports (when drop is not nil). The caller holds the DB's write lock: no
// reader holds an entry of the old base, except frozen copies, which keep
// it alive through their reference.
func (v *view) merge(drop func(entry) bool) {
	old := v.base
	own := old != nil && old.refs.Load() == 1
	bb := newBaseBuilder(v.alloc)
	c := old.first()
	emit := func(e entry) {
		if entryKind(e) == kindAbsent || (drop != nil && drop(e)) {
			return
		}
		bb.add(e)
	}
	advance := func() {
		ci := c.ci
		c.next()
		if own && c.ci != ci {
			old.blocks.free(ci) // consumed: give the memory back at once
		}
	}
	v.tree.Ascend(func(it item) bool {
		d := it.e
		dk := entryKey(d)
		for c.valid() {
			be := c.entry()
			// Prefixes decide most comparisons without decoding the key.
			var cmp int
			if bp := c.b.chunks[c.ci].prefix(c.ei); bp != it.pfx {
				cmp = -1
				if bp > it.pfx {
					cmp = 1
				}
			} else {
				cmp = bytes.Compare(entryKey(be), dk)
			}
			if cmp > 0 {
				break
			}
			if cmp < 0 {
				emit(be)
			}
			advance()
			if cmp == 0 {
				break
			}
		}
		emit(d)
		return true
	})
	for c.valid() {
		emit(c.entry())
		advance()
	}
	nb := bb.finish()
	old.unref()
	v.base = nb
	v.tree = btree.NewG[item](btreeDegree, itemLess)
	v.live, v.bytes = nb.live, 0
	v.mergeAt = max(mergeMinEntries, nb.n/mergeDiv)
}

// frozen returns a copy of v that later changes to v do not affect, for
// reading without the lock. Release it when done.
func (v *view) frozen() *view {
	if v.base != nil {
		v.base.refs.Add(1)
	}
	return &view{base: v.base, tree: v.tree.Clone(), dels: v.dels.Clone(), marks: maps(v.marks), max: v.max, alloc: v.alloc}
}

// release drops the view's reference to its base run.
func (v *view) release() {
	v.base.unref()
	v.base = nil
	v.tree = btree.NewG[item](btreeDegree, itemLess)
}

// wins reports whether an incoming row (seq, kind) beats the existing
// entry e for its key.
func wins(seq uint64, tomb bool, e entry) bool {
	es := entrySeq(e)
	if seq != es {
		return seq > es
	}
	return tomb && entryKind(e) != kindTombstone
}

// applyPut applies a put row. loc is non-nil for a committed value kept in
// the log. It reports whether the view changed.
func (v *view) applyPut(seq uint64, key, value []byte, loc *lazyLoc) bool {
	if seq > v.max {
		// Newer than every entry and range tombstone: it wins without a
		// lookup (the usual case for local writes).
		v.max = seq
		if loc != nil {
			v.set(newLazy(seq, key, *loc))
		} else {
			v.set(newPut(seq, key, value))
		}
		return true
	}
	if c := v.covered(key); c != 0 && c >= seq {
		return false
	}
	if old := v.lookup(key); old != nil {
		if entrySeq(old) == seq && entryKind(old) != kindTombstone {
			// The same row seen again: only a newer location of a
			// committed value replaces it.
			if loc == nil || entryKind(old) != kindLazy {
				return false
			}
			ol, ok := decodeLazy(entryPayload(old))
			if ok && ol.version >= loc.version {
				return false
			}
		} else if !wins(seq, false, old) {
			return false
		}
	}
	if loc != nil {
		v.set(newLazy(seq, key, *loc))
	} else {
		v.set(newPut(seq, key, value))
	}
	return true
}

// applyDelete applies a point tombstone.
func (v *view) applyDelete(seq uint64, key []byte) bool {
	if seq > v.max {
		v.max = seq
		v.set(newTombstone(seq, key))
		return true
	}
	if c := v.covered(key); c != 0 && c >= seq {
		return false
	}
	if old := v.lookup(key); old != nil && !wins(seq, true, old) {
		return false
	}
	v.set(newTombstone(seq, key))
	return true
}

// applyDeleteRange applies a range tombstone over [start, end).
func (v *view) applyDeleteRange(seq uint64, start, end []byte) bool {
	v.observe(seq)
	if bytes.Compare(start, end) >= 0 {
		return false
	}
	v.addSpan(start, end, seq)
	// Drop the entries the tombstone shadows: from the delta, and from the
	// base by an absent entry.
	var drop []entry
	v.ascend(start, func(e entry) bool {
		if bytes.Compare(entryKey(e), end) >= 0 {
			return false
		}
		if entrySeq(e) <= seq {
			drop = append(drop, e)
		}
		return true
	})
	for _, e := range drop {
		k := entryKey(e)
		if v.base.get(k) != nil {
			v.setNoMerge(newAbsent(k))
		} else if old, ok := v.tree.Delete(item{keyPrefix(k), e}); ok {
			v.account(old.e, -1)
		}
	}
	v.maybeMerge()
	return true
}

// addSpan merges [start, end)@seq into the disjoint span set, keeping the
// highest seq over every key.
func (v *view) addSpan(start, end []byte, seq uint64) {
	var ov []*span
	v.dels.DescendLessOrEqual(&span{start: start}, func(s *span) bool {
		if bytes.Compare(s.end, start) > 0 {
			ov = append(ov, s)
		}
		return false
	})
	v.dels.AscendGreaterOrEqual(&span{start: start}, func(s *span) bool {
		if bytes.Compare(s.start, end) >= 0 {
			return false
		}
		if len(ov) == 0 || ov[len(ov)-1] != s {
			ov = append(ov, s)
		}
		return true
	})
	if len(ov) == 0 {
		v.dels.ReplaceOrInsert(&span{start: clone(start), end: clone(end), seq: seq})
		return
	}
	for _, s := range ov {
		v.dels.Delete(s)
	}
	var pieces []*span
	add := func(a, b []byte, q uint64) {
		if bytes.Compare(a, b) >= 0 {
			return
		}
		// Merge with the previous piece when contiguous and equal.
		if n := len(pieces); n > 0 && pieces[n-1].seq == q && bytes.Equal(pieces[n-1].end, a) {
			pieces[n-1].end = clone(b)
			return
		}
		pieces = append(pieces, &span{start: clone(a), end: clone(b), seq: q})
	}
	cur := start
	for _, s := range ov {
		if bytes.Compare(s.start, start) < 0 {
			add(s.start, start, s.seq)
		}
		os, oe := maxBytes(s.start, start), minBytes(s.end, end)
		if bytes.Compare(cur, os) < 0 {
			add(cur, os, seq)
		}
		add(os, oe, max(s.seq, seq))
		if bytes.Compare(s.end, end) > 0 {
			add(end, s.end, s.seq)
		}
		cur = oe
	}
	if bytes.Compare(cur, end) < 0 {
		add(cur, end, seq)
	}
	for _, p := range pieces {
		v.dels.ReplaceOrInsert(p)
	}
}

// applyRow applies one log row. lazy, when non-zero, is the version the
// row was read at; values longer than threshold are then kept as locations.
func (v *view) applyRow(r *Row, version uint64, threshold int) {
	switch r.Op {
	case OpPut:
		if version != 0 && len(r.Value) > threshold {
			v.applyPut(r.Seq, r.Key, nil, &lazyLoc{version: version, addr: r.Addr, length: uint32(len(r.Value))})
		} else {
			v.applyPut(r.Seq, r.Key, r.Value, nil)
		}
	case OpDelete:
		v.applyDelete(r.Seq, r.Key)
	case OpDeleteRange:
		v.applyDeleteRange(r.Seq, r.Key, r.Value)
	case OpMark:
		v.observe(r.Seq)
		if m, ok := DecodeMark(r.Value); ok {
			v.observe(m)
			if m > v.marks[string(r.Key)] {
				v.marks[string(r.Key)] = m
			}
		}
	}
}

// gc drops point and range tombstones older than cutoff.
func (v *view) gc(cutoff uint64) {
	v.merge(func(e entry) bool { return entryKind(e) == kindTombstone && entrySeq(e) < cutoff })
	var sd []*span
	v.dels.Ascend(func(s *span) bool {
		if s.seq < cutoff {
			sd = append(sd, s)
		}
		return true
	})
	for _, s := range sd {
		v.dels.Delete(s)
	}
}

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

func maxBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

func minBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}
