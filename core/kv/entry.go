package kv

import (
	"bytes"
	"encoding/binary"
)

// An entry is one key of the in-memory view, held in a single allocation:
//
//	+---------+-------+--------------+-----+---------+
//	| seq u64 | flags | key len      | key | payload |
//	| LE      | u8    | uvarint      |     |         |
//	+---------+-------+--------------+-----+---------+
//
// flags holds the kind: a put whose payload is the value, a point tombstone
// with no payload, or a lazy put whose payload locates a committed value in
// the log: version uvarint | row address uvarint | value length uvarint.
type entry = []byte

const (
	kindPut       byte = 0
	kindTombstone byte = 1
	kindLazy      byte = 2
	// kindAbsent exists only in a view's delta: the key has no entry, even
	// if the base holds one.
	kindAbsent byte = 3

	entryHeader = 9 // seq + flags
)

func entrySeq(e entry) uint64 { return binary.LittleEndian.Uint64(e) }
func entryKind(e entry) byte  { return e[8] }

// entryKeyEnd returns the offsets of the key in e.
func entryKeyBounds(e entry) (int, int) {
	n := uint64(e[entryHeader])
	i := entryHeader + 1
	if n >= 0x80 {
		var w int
		n, w = binary.Uvarint(e[entryHeader:])
		i = entryHeader + w
	}
	return i, i + int(n)
}

func entryKey(e entry) []byte {
	s, t := entryKeyBounds(e)
	return e[s:t:t]
}

// entryPayload returns the bytes after the key: the value of a put, the
// location of a lazy put.
func entryPayload(e entry) []byte {
	_, t := entryKeyBounds(e)
	return e[t:len(e):len(e)]
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// newEntry allocates an entry of kind with room for a payload of plen bytes
// and returns it with the payload slice to fill.
func newEntry(seq uint64, kind byte, key []byte, plen int) (entry, []byte) {
	kl := len(key)
	n := entryHeader + uvarintLen(uint64(kl)) + kl + plen
	e := make([]byte, n)
	binary.LittleEndian.PutUint64(e, seq)
	e[8] = kind
	i := entryHeader + binary.PutUvarint(e[entryHeader:], uint64(kl))
	i += copy(e[i:], key)
	return e, e[i:]
}

func newPut(seq uint64, key, value []byte) entry {
	e, p := newEntry(seq, kindPut, key, len(value))
	copy(p, value)
	return e
}

func newAbsent(key []byte) entry {
	e, _ := newEntry(0, kindAbsent, key, 0)
	return e
}

func newTombstone(seq uint64, key []byte) entry {
	e, _ := newEntry(seq, kindTombstone, key, 0)
	return e
}

// lazyLoc locates a committed value in the log.
type lazyLoc struct {
	version uint64
	addr    uint64
	length  uint32
}

func newLazy(seq uint64, key []byte, loc lazyLoc) entry {
	var tmp [30]byte
	p := binary.AppendUvarint(tmp[:0], loc.version)
	p = binary.AppendUvarint(p, loc.addr)
	p = binary.AppendUvarint(p, uint64(loc.length))
	e, dst := newEntry(seq, kindLazy, key, len(p))
	copy(dst, p)
	return e
}

func decodeLazy(p []byte) (lazyLoc, bool) {
	v, n := binary.Uvarint(p)
	if n <= 0 {
		return lazyLoc{}, false
	}
	p = p[n:]
	a, n := binary.Uvarint(p)
	if n <= 0 {
		return lazyLoc{}, false
	}
	p = p[n:]
	l, n := binary.Uvarint(p)
	if n <= 0 || n != len(p) || l > 1<<32-1 {
		return lazyLoc{}, false
	}
	return lazyLoc{version: v, addr: a, length: uint32(l)}, true
}

// validEntry reports whether e is a well-formed entry (used when decoding
// snapshots, whose bytes are untrusted).
func validEntry(e []byte) bool {
	if len(e) < entryHeader+1 {
		return false
	}
	kl, w := binary.Uvarint(e[entryHeader:])
	if w <= 0 || kl > uint64(len(e)) || entryHeader+w+int(kl) > len(e) {
		return false
	}
	p := e[entryHeader+w+int(kl):]
	switch e[8] {
	case kindPut:
		return true
	case kindTombstone:
		return len(p) == 0
	case kindLazy:
		_, ok := decodeLazy(p)
		return ok
	}
	return false
}

func entryLess(a, b entry) bool { return bytes.Compare(entryKey(a), entryKey(b)) < 0 }

// keyPrefix returns the first 8 bytes of key as a big-endian number,
// zero-padded: prefixes order like the keys, ties aside.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}
