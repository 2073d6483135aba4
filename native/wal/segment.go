package wal

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

// A segment file is a sequence of records:
//
//	+-----------+-------------------+----------------+
//	| len u32LE | xxh3-64(payload)  | payload        |
//	|           | u64 LE            | len bytes      |
//	+-----------+-------------------+----------------+
//
// The first payload byte is the record kind. Kind 0 is the WAL's own
// control record; every other kind belongs to the caller and must be
// followed by the record's sequence number (u64 LE), by which replay orders
// the records of several writers:
//
//	kind 0 (trim):  0x00 | segment u64 LE | valid length u64 LE
//	other kinds:    kind | seq u64 LE | ...
//
// A trim record starts the segment opened after an append failed and could
// not be cut back out of the previous segment: replay then ignores that
// segment's bytes from the valid length on.
//
// Mapped segments (see mapSegment) are preallocated and zero past their
// last record: a zero length where a record would start ends the segment
// when only zeros follow.
const (
	headerSize = 12
	kindTrim   = 0
	trimSize   = 17
	// MaxRecord is the largest payload Append accepts.
	MaxRecord = 1 << 30
)

func appendRecord(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint64(dst, xxh3.Hash(payload))
	return append(dst, payload...)
}

func trimPayload(seg uint64, valid int64) []byte {
	p := make([]byte, trimSize)
	p[0] = kindTrim
	binary.LittleEndian.PutUint64(p[1:], seg)
	binary.LittleEndian.PutUint64(p[9:], uint64(valid))
	return p
}

// record is one record read from a segment.
type record struct {
	payload []byte
	end     int64 // offset just past the record
}

// parsed is the result of reading one segment.
type parsed struct {
	records []record
	// badAt is the offset of the first record that failed, -1 if none.
	badAt int64
	// torn reports that the failure looks like an append cut short (see
	// tornAt), not like damage to records that were written whole.
	torn bool
	why  string
	// zeroAt is where a tail of zeros (unused reserved space) starts, -1
	// if none.
	zeroAt int64
}

// parseSegment reads records from data. It never panics on arbitrary input.
func parseSegment(data []byte) parsed {
	p := parsed{badAt: -1, zeroAt: -1}
	off := 0
	for off < len(data) {
		rest := data[off:]
		if (len(rest) < 4 || binary.LittleEndian.Uint32(rest) == 0) && allZero(rest) {
			// Space reserved for records that were never written (a
			// mapped segment).
			p.zeroAt = int64(off)
			return p
		}
		if len(rest) < headerSize {
			p.badAt, p.torn, p.why = int64(off), true, "record header cut off"
			return p
		}
		n := binary.LittleEndian.Uint32(rest)
		sum := binary.LittleEndian.Uint64(rest[4:])
		if n > MaxRecord {
			p.badAt, p.why = int64(off), fmt.Sprintf("bad record length %d", n)
			return p
		}
		if uint64(n) > uint64(len(rest)-headerSize) {
			p.badAt, p.why = int64(off), fmt.Sprintf("record of %d bytes cut off after %d", n, len(rest)-headerSize)
			p.torn = tornAt(data, off)
			return p
		}
		payload := rest[headerSize : headerSize+int(n)]
		if xxh3.Hash(payload) != sum {
			p.badAt, p.why = int64(off), "checksum mismatch"
			p.torn = tornAt(data, off)
			return p
		}
		off += headerSize + int(n)
		p.records = append(p.records, record{payload: payload, end: int64(off)})
	}
	return p
}

// An append is cut short by a crash in one of these ways, which tornAt
// tells from damage to records written whole (a flipped bit, an
// overwritten block):
//
//   - write(2) stopped part-way: the segment ends inside the record's
//     header or payload;
//   - a mapped append stopped before its last store: the checksum, stored
//     last, is still zero, and only zeros follow;
//   - the machine stopped before a page of the record reached the disk:
//     the record ends in zeros from a page boundary on, and only zeros
//     follow.
//
// A damaged record can look like one of these: a length made larger runs
// past the end of the file or over the zeros of a mapped segment, and a
// record holding a page of zeros of its own can have a byte flipped before
// it. So a failure only counts as torn when, besides its shape, nothing
// after its header is a whole record (a length made larger hides the
// records it runs over) and the stored checksum does not match the bytes
// under any other length near the last non-zero byte (a length changed in
// the last record). What remains is a failure that a single damaged byte
// cannot cause, except in a last record ending in a page of zeros.
const (
	pageSize = 4096
	// lengthSlack is how many zeros past the last non-zero byte of a
	// failed record tornAt tries as the end of its payload.
	lengthSlack = 64 << 10
	// scanBudget bounds the payload bytes tornAt hashes while looking for
	// whole records after a failed one; past it, the failure counts as
	// damage.
	scanBudget = 64 << 20
)

// tornAt reports whether the record at off, which failed its length or
// checksum check, looks like an append cut short (see above) rather than
// damage.
func tornAt(data []byte, off int) bool {
	rest := data[off:]
	n := int(binary.LittleEndian.Uint32(rest))
	sum := binary.LittleEndian.Uint64(rest[4:])
	if end := headerSize + n; end <= len(rest) {
		// The whole record is there and its checksum fails.
		if !allZero(rest[end:]) {
			return false
		}
		if sum != 0 && !zeroPageTail(data, off, off+end) {
			return false
		}
	}
	last := lastNonZero(rest)
	if sum != 0 && matchesOtherLength(rest, last, sum) {
		return false
	}
	return !wholeRecordIn(rest[1:], last)
}

// lastNonZero returns the index of the last non-zero byte of b, -1 if
// none.
func lastNonZero(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// zeroPageTail reports whether data[start:end] ends in zeros from a page
// boundary on: a page of the record that never reached the disk.
func zeroPageTail(data []byte, start, end int) bool {
	z := start + lastNonZero(data[start:end]) + 1
	q := (z + pageSize - 1) &^ (pageSize - 1)
	return q > start && q < end
}

// matchesOtherLength reports whether the payload of the record rest
// starts, ended anywhere from its last non-zero byte (rest[last]) to
// lengthSlack zeros later, hashes to sum: a whole record whose length was
// damaged.
func matchesOtherLength(rest []byte, last int, sum uint64) bool {
	if last < headerSize {
		return false
	}
	h := xxh3.New()
	_, _ = h.Write(rest[headerSize : last+1])
	var zero [1]byte
	for end := last + 1; ; end++ {
		if h.Sum64() == sum {
			return true
		}
		if end >= len(rest) || end > last+lengthSlack {
			return false
		}
		_, _ = h.Write(zero[:])
	}
}

// wholeRecordIn reports whether a record that passes its checksum starts
// in b before offset limit, or whether looking for one costs more than
// scanBudget (then it answers true: the caller treats the failure as
// damage). Past the last non-zero byte no record can start, so that is
// the limit callers pass.
func wholeRecordIn(b []byte, limit int) bool {
	budget := scanBudget
	for p := 0; p < limit && p+headerSize < len(b); p++ {
		n := int(binary.LittleEndian.Uint32(b[p:]))
		if n < 9 || n > len(b)-p-headerSize {
			continue
		}
		payload := b[p+headerSize : p+headerSize+n]
		if payload[0] == kindTrim && n != trimSize {
			continue
		}
		sum := binary.LittleEndian.Uint64(b[p+4:])
		if sum == 0 {
			continue
		}
		if budget -= n; budget < 0 {
			return true
		}
		if xxh3.Hash(payload) == sum {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// recordSeq returns the sequence number of a caller record.
func recordSeq(payload []byte) (uint64, bool) {
	if len(payload) < 9 || payload[0] == kindTrim {
		return 0, false
	}
	return binary.LittleEndian.Uint64(payload[1:]), true
}

// ReadSegment parses the bytes of one segment file and returns the payloads
// of its caller records (control records are dropped), the offset of the
// first bad record (-1 when none) and whether that failure looks like a torn
// write. It never panics; it is exported for tools and fuzzing.
func ReadSegment(data []byte) (payloads [][]byte, badAt int64, torn bool) {
	p := parseSegment(data)
	for _, r := range p.records {
		if len(r.payload) > 0 && r.payload[0] == kindTrim {
			continue
		}
		payloads = append(payloads, r.payload)
	}
	return payloads, p.badAt, p.torn
}
