package kv

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// Batch collects puts, deletes and range deletes that DB.Write applies
// atomically: under one lock for local readers, and in a single commit in
// storage (a batch is never split across commits) and a single WAL record.
//
// A Batch is not safe for concurrent use. DB.Write copies what it needs, so
// the batch may be reused (after Reset) or discarded once Write returns. The
// zero value is an empty batch ready to use.
type Batch struct {
	repr  []byte // op u8 | key len uvarint | key | [value len uvarint | value]
	count int
}

// Put adds a put of key to value. The batch copies both.
func (b *Batch) Put(key, value []byte) {
	b.repr = appendOp(b.repr, OpPut, key, value)
	b.count++
}

// Delete adds a delete of key.
func (b *Batch) Delete(key []byte) {
	b.repr = appendOp(b.repr, OpDelete, key, nil)
	b.count++
}

// DeleteRange adds a delete of every key in [start, end). A range with
// start >= end deletes nothing.
func (b *Batch) DeleteRange(start, end []byte) {
	b.repr = appendOp(b.repr, OpDeleteRange, start, end)
	b.count++
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return b.count }

// Size returns the encoded size of the batch in bytes.
func (b *Batch) Size() int { return len(b.repr) }

// Reset empties the batch, keeping its buffer.
func (b *Batch) Reset() {
	b.repr = b.repr[:0]
	b.count = 0
}

func appendOp(dst []byte, op Op, key, value []byte) []byte {
	dst = append(dst, byte(op))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	if op != OpDelete {
		dst = binary.AppendUvarint(dst, uint64(len(value)))
		dst = append(dst, value...)
	}
	return dst
}

// A record is the unit written to the WAL and kept in the pending buffer:
//
//	+------+------------+---------------+-------------------------+
//	| kind | first seq  | count uvarint | count ops (batch repr)  |
//	| u8   | u64 LE     |               |                         |
//	+------+------------+---------------+-------------------------+
//
// Operation i of the record has sequence number first seq + i. The leading
// kind byte and sequence number follow the WAL's record contract (see
// package native/wal), so the WAL can order records of several writers.
const (
	// RecordKind is the kind byte of key-value records in a WAL.
	RecordKind byte = 10

	recordHeader = 9
)

// recordOps calls fn for each operation of a record; it returns an error
// for malformed records.
func recordOps(rec []byte, fn func(r *Row) error) error {
	rd, err := newOpReader(rec)
	if err != nil {
		return err
	}
	var r Row
	for {
		ok, err := rd.next(&r)
		if err != nil || !ok {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
}

// opReader decodes the operations of a record one at a time, without a
// callback (so the Row it fills can stay on the caller's stack).
type opReader struct {
	p    []byte
	seq  uint64
	i, n uint64
}

func newOpReader(rec []byte) (opReader, error) {
	if len(rec) < recordHeader+1 || rec[0] != RecordKind {
		return opReader{}, fmt.Errorf("bad record header")
	}
	seq := binary.LittleEndian.Uint64(rec[1:])
	n, w := binary.Uvarint(rec[recordHeader:])
	if w <= 0 || n > uint64(len(rec)) {
		return opReader{}, fmt.Errorf("bad record count")
	}
	return opReader{p: rec[recordHeader+w:], seq: seq, n: n}, nil
}

// next fills r with the next operation; it returns false after the last.
func (o *opReader) next(r *Row) (bool, error) {
	if o.i == o.n {
		if len(o.p) != 0 {
			return false, fmt.Errorf("%d trailing bytes in record", len(o.p))
		}
		return false, nil
	}
	i, p := o.i, o.p
	if len(p) == 0 {
		return false, fmt.Errorf("record truncated at op %d", i)
	}
	*r = Row{Seq: o.seq + i, Op: Op(p[0])}
	p = p[1:]
	var ok bool
	if r.Key, p, ok = readBytes(p); !ok {
		return false, fmt.Errorf("bad key in op %d", i)
	}
	switch r.Op {
	case OpPut, OpDeleteRange:
		if r.Value, p, ok = readBytes(p); !ok {
			return false, fmt.Errorf("bad value in op %d", i)
		}
		if r.Value == nil {
			r.Value = []byte{}
		}
	case OpDelete:
	default:
		return false, fmt.Errorf("bad op %d in op %d", r.Op, i)
	}
	o.i, o.p = i+1, p
	return true, nil
}

func readBytes(p []byte) ([]byte, []byte, bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return nil, p, false
	}
	p = p[w:]
	return p[:n:n], p[n:], true
}

// recordSpan returns the first and last sequence numbers of a well-formed
// record header.
func recordSpan(rec []byte) (first, last uint64, ok bool) {
	if len(rec) < recordHeader+1 || rec[0] != RecordKind {
		return 0, 0, false
	}
	first = binary.LittleEndian.Uint64(rec[1:])
	n, w := binary.Uvarint(rec[recordHeader:])
	if w <= 0 || n == 0 {
		return first, first, w > 0
	}
	return first, first + n - 1, true
}

// clock is the hybrid logical clock handing out sequence numbers: each new
// number is at least the wall clock in nanoseconds since the Unix epoch and
// greater than every number handed out or observed before. Safe for
// concurrent use.
type clock struct {
	mu   sync.Mutex
	last uint64
	now  func() time.Time
}

// next reserves n consecutive numbers and returns the first.
func (c *clock) next(n int) uint64 {
	t := uint64(c.now().UnixNano())
	c.mu.Lock()
	s := max(t, c.last+1)
	c.last = s + uint64(n) - 1
	c.mu.Unlock()
	return s
}

// observe makes later numbers exceed seq.
func (c *clock) observe(seq uint64) {
	c.mu.Lock()
	c.last = max(c.last, seq)
	c.mu.Unlock()
}
