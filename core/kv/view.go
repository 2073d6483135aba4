package kv

import (
	"bytes"
	"slices"
	"sync"

	"github.com/google/btree"
)

// view is the in-memory ordered view of a database: point entries (puts,
// lazy puts and point tombstones) in layers, range tombstones in a B-tree
// of disjoint spans, and the WAL marks seen.
//
// The point entries live in an immutable sorted base run (see baseRun),
// under frozen deltas (imm, newest first) and the active delta that takes
// every change (see delta). A newer layer's entry for a key shadows the
// older layers' (an absent entry hides the key altogether). Reads look
// from the newest layer down; ordered walks merge the layers.
//
// Once the active delta holds a fraction of the base, it is frozen and
// merged with the base into a new one. A view that belongs to a DB (lk
// set) merges on a goroutine of its own: it builds the new base a few
// blocks at a time from the frozen deltas and a copy of the base, and
// swaps each finished stretch in under lk, so readers and writers wait for
// a splice, not for the merge, and the old blocks go back as it goes.
// Other views merge at once.
//
// Applying rows is idempotent and order-independent: a row loses to an
// entry with a newer seq, and to a covering range tombstone with a newer or
// equal seq. At equal seqs a tombstone beats a put. The view is not safe for
// concurrent use; DB guards it with its mutex, lk.
type view struct {
	base    *baseRun
	act     *delta
	imm     []*delta // frozen deltas, newest first
	dels    *btree.BTreeG[*span]
	marks   map[string]uint64 // writer id -> highest committed seq
	max     uint64            // highest seq seen
	alloc   BlockAllocator
	mergeAt int // active delta size that triggers a merge

	lk     *sync.RWMutex // the DB's lock; nil: merge synchronously
	job    *mergeJob     // the running background merge
	gen    uint64        // bumped by synchronous merges, which void a job
	closed bool
}

// span is a fragment of the range-tombstone set: [start, end) deleted at
// seq. Spans in a view never overlap.
type span struct {
	start, end []byte
	seq        uint64
}

func spanLess(a, b *span) bool { return bytes.Compare(a.start, b.start) < 0 }

// mergeMinEntries is the smallest delta that is merged into the base;
// mergeDiv makes the delta merge once it holds base/mergeDiv entries.
// Tests lower mergeMinEntries to exercise the base.
var (
	mergeMinEntries = 1 << 16
	mergeDiv        = 8
)

// maxImm is how many frozen deltas may wait before a merge starts
// regardless of the active delta's size.
const maxImm = 2

// mergeStep is how many base blocks a background merge rebuilds between
// two splices.
var mergeStep = 2

func newView() *view { return newViewAlloc(nil) }

func newViewAlloc(a BlockAllocator) *view {
	if a == nil {
		a = heapBlocks{}
	}
	return &view{
		base:    &baseRun{},
		act:     newDelta(a),
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
	e := v.act.get(key)
	for i := 0; e == nil && i < len(v.imm); i++ {
		e = v.imm[i].get(key)
	}
	if e == nil {
		return v.base.get(key)
	}
	if entryKind(e) == kindAbsent {
		return nil
	}
	return e
}

// mayHoldLazy reports whether any layer holds a lazy entry (shadowed ones
// count too, so it may report true when no key reads through the log).
func (v *view) mayHoldLazy() bool {
	n := v.base.lazy + v.act.lazy
	for _, d := range v.imm {
		n += d.lazy
	}
	return n > 0
}

// live returns the number of live keys, approximately between merges.
func (v *view) live() int {
	n := v.base.live + v.act.live
	for _, d := range v.imm {
		n += d.live
	}
	return n
}

// atLeast reports whether the view holds at least n entries (tombstones
// included).
func (v *view) atLeast(n int) bool {
	c := 0
	v.ascend(nil, func(entry) bool { c++; return c < n })
	return c >= n
}

// src is one layer in an ordered walk: a delta or a base cursor, with its
// current entry (nil once exhausted) and that entry's key prefix.
type src struct {
	isBase bool
	dc     dcursor
	bc     baseCursor
	p      uint64
	e      entry
}

func (s *src) load() {
	if s.isBase {
		if s.bc.valid() {
			s.e = s.bc.b.chunks[s.bc.ci].entry(s.bc.ei)
			s.p = keyPrefix(entryKey(s.e)) // the slot keeps only part of it
		} else {
			s.e = nil
		}
		return
	}
	if s.dc.valid() {
		s.p, s.e = s.dc.item()
	} else {
		s.e = nil
	}
}

func (s *src) move(fwd bool) {
	switch {
	case s.isBase && fwd:
		s.bc.next()
	case s.isBase:
		s.bc.prev()
	case fwd:
		s.dc.next()
	default:
		s.dc.prev()
	}
	s.load()
}

func cmpSrc(a, b *src) int {
	if a.p != b.p {
		if a.p < b.p {
			return -1
		}
		return 1
	}
	return bytes.Compare(entryKey(a.e), entryKey(b.e))
}

// sources returns the view's layers positioned at from (nil: the first or
// last entry), newest first; empty deltas are left out.
func (v *view) sources(from []byte, fwd bool, buf []src) []src {
	add := func(d *delta) {
		if d.n == 0 {
			return
		}
		s := src{}
		if fwd {
			s.dc = d.seekGE(from)
		} else {
			s.dc = d.seekLE(from)
		}
		s.load()
		buf = append(buf, s)
	}
	add(v.act)
	for _, d := range v.imm {
		add(d)
	}
	s := src{isBase: true}
	switch {
	case fwd && from == nil:
		s.bc = v.base.first()
	case fwd:
		s.bc = v.base.seekGE(from)
	case from == nil:
		s.bc = v.base.last()
	default:
		s.bc = v.base.seekLE(from)
	}
	s.load()
	return append(buf, s)
}

// walk calls fn on the merged entries of srcs (newest layer first) in
// ascending (fwd) or descending order, skipping absent entries, until fn
// returns false or the layers run out.
func walk(srcs []src, fwd bool, fn func(entry) bool) {
	if len(srcs) == 1 {
		s := &srcs[0]
		for s.e != nil {
			e := s.e
			s.move(fwd)
			if entryKind(e) != kindAbsent && !fn(e) {
				return
			}
		}
		return
	}
	for {
		best := -1
		for i := range srcs {
			s := &srcs[i]
			if s.e == nil {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			if c := cmpSrc(s, &srcs[best]); (fwd && c < 0) || (!fwd && c > 0) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		b := &srcs[best]
		e, p := b.e, b.p
		k := entryKey(e)
		for i := best + 1; i < len(srcs); i++ {
			if s := &srcs[i]; s.e != nil && s.p == p && bytes.Equal(entryKey(s.e), k) {
				s.move(fwd)
			}
		}
		b.move(fwd)
		if entryKind(e) != kindAbsent && !fn(e) {
			return
		}
	}
}

// ascend calls fn on the entries with keys >= from (every entry when from
// is nil) in ascending order until fn returns false.
func (v *view) ascend(from []byte, fn func(entry) bool) {
	var buf [4]src
	walk(v.sources(from, true, buf[:0]), true, fn)
}

// descend calls fn on the entries with keys <= from (every entry when from
// is nil) in descending order until fn returns false.
func (v *view) descend(from []byte, fn func(entry) bool) {
	var buf [4]src
	walk(v.sources(from, false, buf[:0]), false, fn)
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

// set stores a copy of e in the active delta, replacing any entry with its
// key, and merges when the delta has grown enough.
func (v *view) set(e entry) {
	v.act.set(e)
	v.maybeMerge()
}

func (v *view) maybeMerge() {
	if v.act.n < v.mergeAt && len(v.imm) <= maxImm {
		return
	}
	if v.lk == nil {
		v.merge(nil)
		return
	}
	if v.job == nil {
		v.startJob()
	}
	// A merge is running: the active delta grows until it is done, up to
	// 1.5 times the usual size; then writers wait for the merge (see
	// mergeBacklog), so memory stays bounded when writes outrun merges.
}

// mergeBacklog returns the running merge's done channel when the active
// delta has grown to 1.5 times the merge size meanwhile, for a writer to wait
// on once it has released lk; nil otherwise. The caller holds lk.
func (v *view) mergeBacklog() <-chan struct{} {
	if v.job != nil && 2*v.act.n >= 3*v.mergeAt {
		return v.job.done
	}
	return nil
}

// freezeActive makes the active delta the newest frozen one.
func (v *view) freezeActive() {
	if v.act.n == 0 {
		return
	}
	v.imm = append([]*delta{v.act}, v.imm...)
	v.act = newDelta(v.alloc)
}

// merge folds every layer into a new base run at once, leaving out the
// entries drop reports (when drop is not nil), and voids a running
// background merge. The caller holds the DB's write lock: no reader holds
// an entry of the old layers, except frozen copies and a background merge,
// which keep them alive through their references.
func (v *view) merge(drop func(entry) bool) {
	v.gen++
	v.job = nil
	old := v.base
	bb := newBaseBuilder(v.alloc)
	var buf [4]src
	srcs := v.sources(nil, true, buf[:0])
	bs := &srcs[len(srcs)-1]
	freed := 0
	walk(srcs, true, func(e entry) bool {
		if drop == nil || !drop(e) {
			bb.add(e)
		}
		// Blocks of the old base already consumed go back at once.
		for ; freed < len(old.chunks) && (!bs.bc.valid() || freed < bs.bc.ci); freed++ {
			old.chunks[freed].blk.unref()
		}
		return true
	})
	for ; freed < len(old.chunks); freed++ {
		old.chunks[freed].blk.unref()
	}
	v.act.unref()
	for _, d := range v.imm {
		d.unref()
	}
	v.base = bb.finish()
	v.act, v.imm = newDelta(v.alloc), nil
	v.mergeAt = max(mergeMinEntries, v.base.n/mergeDiv)
}

// mergeJob is a background merge of frozen deltas into the base.
type mergeJob struct {
	ds   []*delta // the deltas it merges, newest first (references held)
	base *baseRun // the base when it started (references held)
	gen  uint64
	done chan struct{}
}

// startJob freezes the active delta and merges every frozen delta into the
// base on a new goroutine. The caller holds lk.
func (v *view) startJob() {
	v.freezeActive()
	ds := slices.Clone(v.imm)
	for _, d := range ds {
		d.refs.Add(1)
	}
	j := &mergeJob{ds: ds, base: v.base.clone(), gen: v.gen, done: make(chan struct{})}
	v.job = j
	go v.runJob(j)
}

// runJob rebuilds the base mergeStep blocks at a time: the entries of those
// blocks and the deltas' entries in their key range go into new blocks,
// which replace the old ones in the view's base under lk. The deltas stay
// in the view until the end, so every intermediate state reads the same.
//
// A step's last new block is usually part full. Unless it is nearly full,
// it is carried into the next step, which rebuilds it together with that
// step's blocks, so the new base is made of full blocks but its last: a
// base rebuilt by many merges would otherwise keep a part-full block every
// mergeStep blocks.
func (v *view) runJob(j *mergeJob) {
	old := j.base.chunks
	done := 0            // old chunks whose job references are dropped
	var carry *baseChunk // the previous step's last block (a reference held)
	defer func() {
		for ; done < len(old); done++ {
			old[done].blk.unref()
		}
		if carry != nil {
			carry.blk.unref()
		}
		for _, d := range j.ds {
			d.unref()
		}
		close(j.done)
	}()
	pos := 0 // where old[i] sits in the view's base
	in := make([]baseChunk, 0, mergeStep+1)
	for i := 0; i == 0 || i < len(old); i += mergeStep {
		e := min(i+mergeStep, len(old))
		var lo, hi []byte
		if i > 0 {
			lo = old[i].first
		}
		if e < len(old) {
			hi = old[e].first
		}
		bb := newBaseBuilder(v.alloc)
		srcs := make([]src, 0, len(j.ds)+1)
		for _, d := range j.ds {
			s := src{dc: d.seekGE(lo)}
			s.load()
			srcs = append(srcs, s)
		}
		// The carried block holds merged entries below lo: it is read as
		// base, and the deltas start at lo.
		in = in[:0]
		at, n := pos, e-i
		if carry != nil {
			in = append(in, *carry)
			at, n = pos-1, n+1
		}
		in = append(in, old[i:e]...)
		bs := src{isBase: true, bc: (&baseRun{chunks: in}).first()}
		bs.load()
		srcs = append(srcs, bs)
		walk(srcs, true, func(en entry) bool {
			if hi != nil && bytes.Compare(entryKey(en), hi) >= 0 {
				return false
			}
			bb.add(en)
			return true
		})
		nb := bb.finish()
		v.lk.Lock()
		if v.gen != j.gen || v.closed {
			v.lk.Unlock()
			nb.release()
			return
		}
		run, replaced := v.base.splice(at, n, nb.chunks)
		v.base = run
		prev := carry
		carry = nil
		if k := len(nb.chunks); e < len(old) && k > 0 && !nb.chunks[k-1].nearlyFull() {
			carry = &nb.chunks[k-1]
			carry.blk.ref()
		}
		v.lk.Unlock()
		for k := range replaced {
			replaced[k].blk.unref()
		}
		if prev != nil {
			prev.blk.unref()
		}
		for ; done < e; done++ {
			old[done].blk.unref()
		}
		pos = at + len(nb.chunks)
	}
	v.lk.Lock()
	defer v.lk.Unlock()
	if v.gen != j.gen || v.closed {
		return
	}
	n := len(v.imm) - len(j.ds)
	for _, d := range v.imm[n:] {
		d.unref()
	}
	v.imm = slices.Clone(v.imm[:n])
	v.job = nil
	v.mergeAt = max(mergeMinEntries, v.base.n/mergeDiv)
	v.maybeMerge()
}

// wait waits for the running background merge, if any. The caller must
// not hold lk.
func (v *view) wait() {
	for {
		v.lk.RLock()
		j := v.job
		v.lk.RUnlock()
		if j == nil {
			return
		}
		<-j.done
	}
}

// frozen returns a copy of v that later changes to v do not affect, for
// reading without the lock. Release it when done. The caller holds lk.
func (v *view) frozen() *view {
	v.freezeActive()
	f := &view{base: v.base.clone(), act: newDelta(v.alloc), imm: slices.Clone(v.imm), dels: v.dels.Clone(), marks: maps(v.marks), max: v.max, alloc: v.alloc}
	for _, d := range f.imm {
		d.refs.Add(1)
	}
	if v.lk != nil && v.job == nil && len(v.imm) > maxImm {
		v.startJob()
	}
	return f
}

// release drops the view's references to its layers and stops its
// background merge from touching it. The caller holds lk, if any.
func (v *view) release() {
	v.closed = true
	v.gen++
	v.job = nil
	v.base.release()
	v.act.unref()
	for _, d := range v.imm {
		d.unref()
	}
	v.base, v.imm = &baseRun{}, nil
	v.act = newDelta(v.alloc)
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
		v.storePut(seq, key, value, loc)
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
	v.storePut(seq, key, value, loc)
	return true
}

// storePut stores a put that won: a reference to a committed value kept in
// the log (loc), or the value itself in the active delta.
func (v *view) storePut(seq uint64, key, value []byte, loc *lazyLoc) {
	if loc != nil {
		v.set(newLazy(seq, key, *loc))
		return
	}
	v.act.setPut(seq, key, value)
	v.maybeMerge()
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
	// Hide the entries the tombstone shadows behind absent entries.
	var drop [][]byte
	v.ascend(start, func(e entry) bool {
		if bytes.Compare(entryKey(e), end) >= 0 {
			return false
		}
		if entrySeq(e) <= seq {
			drop = append(drop, clone(entryKey(e)))
		}
		return true
	})
	for _, k := range drop {
		v.act.set(newAbsent(k))
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
