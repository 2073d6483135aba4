package kv

import (
	"bytes"

	"github.com/google/btree"
)

// view is the in-memory ordered view of a database: point entries (puts,
// lazy puts and point tombstones) in a B-tree ordered by key, range
// tombstones in a second B-tree of disjoint spans, and the WAL marks seen.
//
// Applying rows is idempotent and order-independent: a row loses to an
// entry with a newer seq, and to a covering range tombstone with a newer or
// equal seq. At equal seqs a tombstone beats a put. The view is not safe for
// concurrent use; DB guards it with its mutex.
type view struct {
	tree  *btree.BTreeG[entry]
	dels  *btree.BTreeG[*span]
	live  int               // put entries (live keys)
	marks map[string]uint64 // writer id -> highest committed seq
	max   uint64            // highest seq seen
	bytes int64             // bytes held by entries (approximate)
}

// span is a fragment of the range-tombstone set: [start, end) deleted at
// seq. Spans in a view never overlap.
type span struct {
	start, end []byte
	seq        uint64
}

func spanLess(a, b *span) bool { return bytes.Compare(a.start, b.start) < 0 }

const btreeDegree = 32

func newView() *view {
	return &view{
		tree:  btree.NewG[entry](btreeDegree, entryLess),
		dels:  btree.NewG[*span](8, spanLess),
		marks: make(map[string]uint64),
	}
}

func (v *view) observe(seq uint64) {
	if seq > v.max {
		v.max = seq
	}
}

// lookup returns the entry for key, or nil.
func (v *view) lookup(key []byte) entry {
	p := getProbe(key)
	e, _ := v.tree.Get(*p)
	putProbe(p)
	return e
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

// set stores e, replacing any entry with its key, and keeps the counters.
func (v *view) set(e entry) {
	old, had := v.tree.ReplaceOrInsert(e)
	if had {
		v.account(old, -1)
	}
	v.account(e, 1)
}

func (v *view) account(e entry, sign int) {
	if entryKind(e) != kindTombstone {
		v.live += sign
	}
	v.bytes += int64(sign) * int64(len(e)+48)
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
	v.observe(seq)
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
	v.observe(seq)
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
	// Drop the entries the tombstone shadows.
	var drop []entry
	p := getProbe(start)
	v.tree.AscendGreaterOrEqual(*p, func(e entry) bool {
		if bytes.Compare(entryKey(e), end) >= 0 {
			return false
		}
		if entrySeq(e) <= seq {
			drop = append(drop, e)
		}
		return true
	})
	putProbe(p)
	for _, e := range drop {
		if old, ok := v.tree.Delete(e); ok {
			v.account(old, -1)
		}
	}
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
	var drop []entry
	v.tree.Ascend(func(e entry) bool {
		if entryKind(e) == kindTombstone && entrySeq(e) < cutoff {
			drop = append(drop, e)
		}
		return true
	})
	for _, e := range drop {
		if old, ok := v.tree.Delete(e); ok {
			v.account(old, -1)
		}
	}
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
