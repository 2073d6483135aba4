package kv

import (
	"bytes"
	"context"
	"slices"
)

// iterChunk is how many entries an iterator copies out of the view at a
// time.
const iterChunk = 256

// Iterator walks the keys of a DB in byte-wise order, forward or backward,
// within optional bounds, following pebble's Iterator: position it with
// First, Last, SeekGE, SeekLT or SeekLE, move with Next and Prev, and read
// Key and Value while Valid.
//
// An Iterator is not a snapshot. It copies the view in chunks of 256
// entries; writes made before a chunk is copied are visible, later ones
// are not, and it never returns a key twice or out of order. Values kept in
// the log are read once per chunk.
//
// An Iterator is not safe for concurrent use; several iterators may be used
// concurrently with each other and with writes. Close it when done. It
// keeps its DB reachable but does not keep it open: after DB.Close it
// reports ErrClosed.
type Iterator struct {
	db           *DB
	ctx          context.Context
	lower, upper []byte

	buf   []byte    // keys and values of the chunk
	items []iterKV  // offsets into buf, ascending by key
	locs  []lazyLoc // scratch
	from  []byte    // scratch copy of a seek key

	i     int
	state iterState
	err   error
}

type iterKV struct{ ks, ke, vs, ve int }

type iterState uint8

const (
	iterUnpositioned iterState = iota
	iterValid
	iterAfterLast
	iterBeforeFirst
	iterClosed
)

// NewIter returns an unpositioned iterator over the DB. ctx bounds the reads
// of values kept in the log for the iterator's whole life. The bounds are
// copied.
func (db *DB) NewIter(ctx context.Context, o *IterOptions) (*Iterator, error) {
	if db.d.closed.Load() {
		return nil, ErrClosed
	}
	it := &Iterator{db: db, ctx: ctx}
	if o != nil {
		if o.LowerBound != nil {
			it.lower = clone(o.LowerBound)
		}
		if o.UpperBound != nil {
			it.upper = clone(o.UpperBound)
		}
	}
	return it, nil
}

// First moves to the first key at or above the lower bound and reports
// whether the iterator is valid.
func (it *Iterator) First() bool {
	return it.fillForward(it.lower, true)
}

// Last moves to the last key below the upper bound.
func (it *Iterator) Last() bool {
	return it.fillBackward(it.upper, false)
}

// SeekGE moves to the first key >= key (and >= the lower bound).
func (it *Iterator) SeekGE(key []byte) bool {
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	return it.fillForward(key, true)
}

// SeekLT moves to the last key < key (and below the upper bound).
func (it *Iterator) SeekLT(key []byte) bool {
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	return it.fillBackward(key, false)
}

// SeekLE moves to the last key <= key (and below the upper bound): RocksDB's
// seek-for-prev.
func (it *Iterator) SeekLE(key []byte) bool {
	if it.upper != nil && bytes.Compare(key, it.upper) >= 0 {
		return it.fillBackward(it.upper, false)
	}
	return it.fillBackward(key, true)
}

// Next moves to the next key. After the iterator ran off the front (Prev
// returned false) it moves to the first key; after it ran off the end it
// stays exhausted.
func (it *Iterator) Next() bool {
	switch it.state {
	case iterValid:
		if it.i+1 < len(it.items) {
			it.i++
			return true
		}
		return it.fillForward(it.Key(), false)
	case iterBeforeFirst:
		return it.First()
	}
	return false
}

// Prev moves to the previous key. After the iterator ran off the end it
// moves to the last key; after it ran off the front it stays exhausted.
func (it *Iterator) Prev() bool {
	switch it.state {
	case iterValid:
		if it.i > 0 {
			it.i--
			return true
		}
		return it.fillBackward(it.Key(), false)
	case iterAfterLast:
		return it.Last()
	}
	return false
}

// Valid reports whether the iterator is positioned at a key.
func (it *Iterator) Valid() bool { return it.state == iterValid }

// Key returns the current key. It is valid until the next call that moves
// the iterator; copy it to keep it. Nil when not Valid.
func (it *Iterator) Key() []byte {
	if it.state != iterValid {
		return nil
	}
	kv := it.items[it.i]
	return it.buf[kv.ks:kv.ke:kv.ke]
}

// Value returns the current value, valid as long as Key's result.
func (it *Iterator) Value() []byte {
	if it.state != iterValid {
		return nil
	}
	kv := it.items[it.i]
	return it.buf[kv.vs:kv.ve:kv.ve]
}

// Error returns the error that stopped the iterator, if any.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator and returns its error. Calling Close again
// returns nil.
func (it *Iterator) Close() error {
	if it.state == iterClosed {
		return nil
	}
	it.state = iterClosed
	it.buf, it.items, it.locs = nil, nil, nil
	return it.err
}

// setFrom copies a seek key out of the chunk buffer before it is reused.
func (it *Iterator) setFrom(key []byte) []byte {
	if key == nil {
		return nil
	}
	if it.from == nil {
		it.from = make([]byte, 0, 32)
	}
	it.from = append(it.from[:0], key...)
	return it.from
}

func (it *Iterator) begin() (*db, bool) {
	if it.state == iterClosed {
		return nil, false
	}
	d := it.db.d
	if d.closed.Load() {
		it.err, it.state = ErrClosed, iterUnpositioned
		return nil, false
	}
	if it.err != nil {
		it.state = iterUnpositioned
		return nil, false
	}
	if it.buf == nil {
		it.buf = make([]byte, 0, 4096) // never nil: an empty key is not a nil key
	}
	it.buf, it.items, it.locs = it.buf[:0], it.items[:0], it.locs[:0]
	return d, true
}

// add copies one view entry into the chunk; lazy values are resolved later.
func (it *Iterator) add(e entry) {
	var kv iterKV
	k := entryKey(e)
	kv.ks = len(it.buf)
	it.buf = append(it.buf, k...)
	kv.ke = len(it.buf)
	if entryKind(e) == kindLazy {
		l, _ := decodeLazy(entryPayload(e))
		it.locs = append(it.locs, l)
		kv.vs, kv.ve = -1, len(it.locs)-1
	} else {
		p := entryPayload(e)
		kv.vs = len(it.buf)
		it.buf = append(it.buf, p...)
		kv.ve = len(it.buf)
	}
	it.items = append(it.items, kv)
}

func (it *Iterator) fillForward(from []byte, inclusive bool) bool {
	d, ok := it.begin()
	if !ok {
		return false
	}
	from = it.setFrom(from)
	// it.buf may alias from only through it.from, which begin left alone.
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		it.err, it.state = ErrClosed, iterUnpositioned
		return false
	}
	visit := func(e entry) bool {
		k := entryKey(e)
		if !inclusive && from != nil && bytes.Equal(k, from) {
			return true
		}
		if it.upper != nil && bytes.Compare(k, it.upper) >= 0 {
			return false
		}
		if entryKind(e) != kindTombstone {
			it.add(e)
		}
		return len(it.items) < iterChunk
	}
	d.v.ascend(from, visit)
	d.mu.RUnlock()
	return it.finish(true)
}

func (it *Iterator) fillBackward(from []byte, inclusive bool) bool {
	d, ok := it.begin()
	if !ok {
		return false
	}
	from = it.setFrom(from)
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		it.err, it.state = ErrClosed, iterUnpositioned
		return false
	}
	visit := func(e entry) bool {
		k := entryKey(e)
		if !inclusive && from != nil && bytes.Equal(k, from) {
			return true
		}
		if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
			return false
		}
		if entryKind(e) != kindTombstone {
			it.add(e)
		}
		return len(it.items) < iterChunk
	}
	d.v.descend(from, visit)
	d.mu.RUnlock()
	slices.Reverse(it.items)
	return it.finish(false)
}

// finish resolves the chunk's lazy values and positions the iterator at
// its first (forward) or last (backward) item.
func (it *Iterator) finish(forward bool) bool {
	if len(it.locs) > 0 {
		keys := make([][]byte, len(it.locs))
		for _, kv := range it.items {
			if kv.vs < 0 {
				keys[kv.ve] = it.buf[kv.ks:kv.ke]
			}
		}
		vals, err := it.db.d.resolve(it.ctx, keys, it.locs)
		if err != nil {
			it.err, it.state = err, iterUnpositioned
			return false
		}
		out := it.items[:0]
		for _, kv := range it.items {
			if kv.vs < 0 {
				v := vals[kv.ve]
				if v == nil {
					continue // deleted while the chunk was read
				}
				kv.vs = len(it.buf)
				it.buf = append(it.buf, v...)
				kv.ve = len(it.buf)
			}
			out = append(out, kv)
		}
		it.items = out
	}
	if len(it.items) == 0 {
		if forward {
			it.state = iterAfterLast
		} else {
			it.state = iterBeforeFirst
		}
		return false
	}
	it.state = iterValid
	if forward {
		it.i = 0
	} else {
		it.i = len(it.items) - 1
	}
	return true
}
