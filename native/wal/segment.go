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
	// torn reports that the failure looks like an interrupted write: the
	// record runs past the end of the file, or fails its checksum and is
	// the last thing in the file, or everything from it on is zero.
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
		if uint64(n) > uint64(len(rest)-headerSize) {
			p.badAt, p.torn, p.why = int64(off), true, fmt.Sprintf("record of %d bytes cut off", n)
			if n > MaxRecord {
				p.torn = allZero(rest)
				p.why = fmt.Sprintf("bad record length %d", n)
			}
			return p
		}
		payload := rest[headerSize : headerSize+int(n)]
		if xxh3.Hash(payload) != sum {
			p.badAt, p.why = int64(off), "checksum mismatch"
			// Torn: nothing but zeros follows (the last record written
			// when the process or machine stopped).
			p.torn = allZero(rest[headerSize+int(n):])
			return p
		}
		off += headerSize + int(n)
		p.records = append(p.records, record{payload: payload, end: int64(off)})
	}
	return p
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
