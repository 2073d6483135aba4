package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/zeebo/xxh3"
)

// A snapshot file holds a view's committed state so a reopen can skip
// scanning the fragments it covers:
//
//	+----------+--------------------------------------------------+----------+
//	| "KV0SNP1\n" | body                                           | xxh3-64  |
//	| 8 bytes  |                                                  | u64 LE   |
//	+----------+--------------------------------------------------+----------+
//
//	body := threshold uvarint | version uvarint | max seq uvarint
//	        fragments: count uvarint, then per fragment
//	            id uvarint | rows uvarint | data file bytes | deletion file bytes
//	        marks:     count uvarint, then per mark  writer bytes | seq uvarint
//	        entries:   count uvarint, then per entry entry bytes (see entry.go)
//	        spans:     count uvarint, then per span  start bytes | end bytes | seq uvarint
//	bytes := len uvarint | data
//
// The checksum covers everything before it. A snapshot is used only when
// its threshold equals the handle's LazyValueThreshold and every fragment it
// lists is still present, unchanged, in the version being opened.
const snapMagic = "KV0SNP1\n"

type snapshot struct {
	threshold uint64
	version   uint64
	maxSeq    uint64
	frags     []FragmentInfo
	marks     map[string]uint64
	view      *view
}

// encodeSnapshot appends the snapshot of v to dst. The caller holds the
// view's lock.
func encodeSnapshot(dst []byte, threshold, version uint64, frags []FragmentInfo, v *view) []byte {
	sw := snapWriter{buf: dst, start: len(dst)}
	sw.encode(threshold, version, frags, v)
	return sw.buf
}

// writeSnapshot writes the snapshot of v to w in pieces of about
// snapChunk bytes, so a large view is never held in memory twice. The
// caller holds the view's lock.
func writeSnapshot(w io.Writer, threshold, version uint64, frags []FragmentInfo, v *view) error {
	sw := snapWriter{buf: make([]byte, 0, snapChunk+64<<10), w: w, h: xxh3.New()}
	sw.encode(threshold, version, frags, v)
	sw.emit()
	return sw.err
}

// snapChunk is the size of the pieces writeSnapshot hands to its writer.
const snapChunk = 256 << 10

// snapWriter builds a snapshot in buf. With w set, it hands buf to w (and
// the hasher) whenever buf passes snapChunk bytes; without, buf grows to
// the whole snapshot, which starts at buf[start].
type snapWriter struct {
	buf   []byte
	start int
	w     io.Writer
	h     *xxh3.Hasher
	err   error
}

// emit hands the buffered bytes to the writer.
func (sw *snapWriter) emit() {
	if sw.w == nil || len(sw.buf) == 0 {
		return
	}
	_, _ = sw.h.Write(sw.buf)
	if sw.err == nil {
		_, sw.err = sw.w.Write(sw.buf)
	}
	sw.buf = sw.buf[:0]
}

func (sw *snapWriter) maybeEmit() {
	if sw.w != nil && len(sw.buf) >= snapChunk {
		sw.emit()
	}
}

func (sw *snapWriter) uvarint(x uint64) { sw.buf = binary.AppendUvarint(sw.buf, x) }

func (sw *snapWriter) bytes(b []byte) {
	sw.uvarint(uint64(len(b)))
	sw.buf = append(sw.buf, b...)
	sw.maybeEmit()
}

// encode writes the whole snapshot, checksum included.
func (sw *snapWriter) encode(threshold, version uint64, frags []FragmentInfo, v *view) {
	sw.buf = append(sw.buf, snapMagic...)
	sw.uvarint(threshold)
	sw.uvarint(version)
	sw.uvarint(v.max)
	sw.uvarint(uint64(len(frags)))
	for _, f := range frags {
		sw.uvarint(f.ID)
		sw.uvarint(f.Rows)
		sw.bytes([]byte(f.DataFile))
		sw.bytes([]byte(f.DeletionFile))
	}
	sw.uvarint(uint64(len(v.marks)))
	for w, s := range v.marks {
		sw.bytes([]byte(w))
		sw.uvarint(s)
	}
	n := 0
	v.ascend(nil, func(entry) bool {
		n++
		return true
	})
	sw.uvarint(uint64(n))
	v.ascend(nil, func(e entry) bool {
		sw.bytes(e)
		return sw.err == nil
	})
	sw.uvarint(uint64(v.dels.Len()))
	v.dels.Ascend(func(s *span) bool {
		sw.bytes(s.start)
		sw.bytes(s.end)
		sw.uvarint(s.seq)
		return true
	})
	var sum uint64
	if sw.w != nil {
		sw.emit()
		sum = sw.h.Sum64()
	} else {
		sum = xxh3.Hash(sw.buf[sw.start:])
	}
	sw.buf = binary.LittleEndian.AppendUint64(sw.buf, sum)
}

var errSnapshot = errors.New("malformed snapshot")

// ValidateSnapshot checks the framing and checksum of snapshot bytes, as
// written by a DB through its SnapshotStore. It returns an error matching
// ErrCorruption when they are damaged. Stores may call it before replacing
// a good snapshot.
func ValidateSnapshot(data []byte) error {
	_, err := decodeSnapshot(data, "snapshot", false)
	return err
}

// decodeSnapshot parses data; with build set it also rebuilds the view,
// on the Go heap. It never panics on arbitrary input.
func decodeSnapshot(data []byte, name string, build bool) (*snapshot, error) {
	var alloc BlockAllocator
	if build {
		alloc = heapBlocks{}
	}
	return decodeSnapshotAlloc(data, name, alloc)
}

// decodeSnapshotAlloc parses data and, when alloc is not nil, rebuilds the
// view with its base run in blocks from alloc. Entries must be sorted by
// key, each key once.
func decodeSnapshotAlloc(data []byte, name string, alloc BlockAllocator) (s *snapshot, err error) {
	build := alloc != nil
	fail := func(off int, why string) error {
		return &CorruptionError{File: name, Offset: int64(off), Reason: why}
	}
	if len(data) < len(snapMagic)+8 || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fail(0, "bad magic")
	}
	body := data[:len(data)-8]
	want := binary.LittleEndian.Uint64(data[len(data)-8:])
	if build && len(body) >= 1<<20 {
		// A large snapshot is checksummed on another goroutine while it
		// is decoded (decoding checks every entry, so damaged bytes fail
		// or build a view that the checksum then throws away).
		sum := make(chan uint64, 1)
		go func() { sum <- xxh3.Hash(body) }()
		defer func() {
			if <-sum != want && err == nil {
				s.view.release()
				s, err = nil, fail(len(data)-8, "checksum mismatch")
			}
		}()
	} else if xxh3.Hash(body) != want {
		return nil, fail(len(data)-8, "checksum mismatch")
	}
	d := decoder{p: body, off: len(snapMagic)}
	d.p = d.p[len(snapMagic):]
	s = &snapshot{marks: map[string]uint64{}}
	s.threshold = d.uvarint()
	s.version = d.uvarint()
	s.maxSeq = d.uvarint()
	n := d.count(4)
	for i := 0; i < n && d.err == nil; i++ {
		var f FragmentInfo
		f.ID = d.uvarint()
		f.Rows = d.uvarint()
		f.DataFile = string(d.bytes())
		f.DeletionFile = string(d.bytes())
		s.frags = append(s.frags, f)
	}
	n = d.count(2)
	for i := 0; i < n && d.err == nil; i++ {
		w := string(d.bytes())
		s.marks[w] = d.uvarint()
	}
	if build {
		s.view = newViewAlloc(alloc)
		s.view.max = s.maxSeq
		for w, m := range s.marks {
			s.view.marks[w] = m
		}
		built := s.view
		defer func() {
			if err != nil {
				built.release()
			}
		}()
	}
	// The entries become the view's base run as they are: checked, copied
	// in order, no tree to build. A large snapshot is cut into parts
	// decoded side by side.
	n = d.count(entryHeader + 2)
	if build && n >= parallelEntries && runtime.GOMAXPROCS(0) > 1 {
		run, perr := decodeEntriesParallel(&d, n, runtime.GOMAXPROCS(0), alloc)
		if perr != nil {
			return nil, fail(int(perr.(*CorruptionError).Offset), perr.(*CorruptionError).Reason)
		}
		s.view.base.release()
		s.view.base = run
	} else {
		var bb *baseBuilder
		if build {
			bb = newBaseBuilder(alloc)
			s.view.base.release()
			s.view.base = bb.run
		} else {
			bb = &baseBuilder{run: &baseRun{}}
		}
		if off, why := decodeEntries(&d, n, bb, build); why != "" {
			return nil, fail(off, why)
		}
	}
	if build {
		s.view.mergeAt = max(mergeMinEntries, s.view.base.n/mergeDiv)
	}
	n = d.count(3)
	for i := 0; i < n && d.err == nil; i++ {
		a, b := d.bytes(), d.bytes()
		q := d.uvarint()
		if build && d.err == nil {
			s.view.addSpan(a, b, q)
		}
	}
	if d.err == nil && len(d.p) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.p))
	}
	if d.err != nil {
		return nil, fail(d.off, d.err.Error())
	}
	return s, nil
}

// parallelEntries is the smallest number of snapshot entries decoded in
// parallel.
const parallelEntries = 1 << 16

// decodeEntries reads n entries from d into bb (only checking them unless
// build is set). It returns the offset and reason of the first bad entry,
// or "" once all are read (d.err may still be set).
func decodeEntries(d *decoder, n int, bb *baseBuilder, build bool) (int, string) {
	for i := 0; i < n && d.err == nil; i++ {
		off := d.off
		e := d.bytes()
		if d.err != nil {
			break
		}
		if !validEntry(e) {
			return off, "bad entry"
		}
		k := entryKey(e)
		if !bb.sorted(k) {
			return off, "entries out of order"
		}
		if build {
			bb.add(e)
		} else {
			bb.last = k
			bb.run.n++
		}
	}
	return 0, ""
}

// decodeEntriesParallel reads n entries from d into a new base run, in
// parts decoded on their own goroutines: a first pass over the entry
// lengths finds where each part starts. Errors are *CorruptionError with
// the offset and reason (the caller names the file).
func decodeEntriesParallel(d *decoder, n, parts int, alloc BlockAllocator) (*baseRun, error) {
	type part struct {
		d     decoder
		count int
		bb    *baseBuilder
		off   int
		why   string
	}
	per := (n + parts - 1) / parts
	ps := make([]part, 0, parts)
	p, base := d.p, d.off
	pos := 0
	for i := 0; i < n; i++ {
		if i%per == 0 {
			ps = append(ps, part{d: decoder{off: base + pos}, count: min(per, n-i)})
		}
		l, w := binary.Uvarint(p[pos:])
		if w <= 0 || l > uint64(len(p)-pos-w) {
			return nil, &CorruptionError{Offset: int64(base + pos), Reason: errSnapshot.Error()}
		}
		pos += w + int(l)
	}
	for k := range ps {
		start := ps[k].d.off - base
		end := pos
		if k+1 < len(ps) {
			end = ps[k+1].d.off - base
		}
		ps[k].d.p = p[start:end]
	}
	d.p, d.off = p[pos:], base+pos
	var wg sync.WaitGroup
	for k := range ps {
		wg.Add(1)
		go func(pt *part) {
			defer wg.Done()
			pt.bb = newBaseBuilder(alloc)
			pt.off, pt.why = decodeEntries(&pt.d, pt.count, pt.bb, true)
			if pt.why == "" && pt.d.err != nil {
				pt.off, pt.why = pt.d.off, pt.d.err.Error()
			}
		}(&ps[k])
	}
	wg.Wait()
	run := &baseRun{}
	var err error
	for k := range ps {
		pt := &ps[k]
		if err == nil && pt.why != "" {
			err = &CorruptionError{Offset: int64(pt.off), Reason: pt.why}
		}
		if err == nil && k > 0 && bytes.Compare(ps[k-1].bb.last, pt.bb.run.chunks[0].first) >= 0 {
			err = &CorruptionError{Offset: int64(pt.d.off), Reason: "entries out of order"}
		}
		r := pt.bb.run
		run.chunks = append(run.chunks, r.chunks...)
		run.n += r.n
		run.live += r.live
		run.lazy += r.lazy
		run.size += r.size
	}
	if err != nil {
		run.release()
		return nil, err
	}
	return run, nil
}

// decoder reads uvarints and byte strings, recording the first error.
type decoder struct {
	p   []byte
	off int
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = errSnapshot
		return 0
	}
	d.p = d.p[n:]
	d.off += n
	return v
}

// count reads an element count and checks that the remaining bytes can hold
// that many elements of at least min bytes each.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.p)/min) {
		d.err = errSnapshot
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.err = errSnapshot
		return nil
	}
	b := d.p[:n:n]
	d.p = d.p[n:]
	d.off += int(n)
	return b
}
