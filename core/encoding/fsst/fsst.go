package fsst

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

const (
	// TableSize is the size in bytes of a serialised symbol table.
	TableSize = 8 + 256*8 + 256
	// Escape is the code byte that announces a literal byte.
	Escape = 255
	// MaxSymbolLen is the length in bytes of the longest symbol.
	MaxSymbolLen = 8
	// MaxSymbols is the largest number of symbols a table can use: every
	// code but the escape.
	MaxSymbols = 255

	magic = 0x46535354 // "FSST", the high 32 bits of the header
	// maxInput bounds compressed input so that 8 bytes per code cannot
	// overflow an int.
	maxInput   = math.MaxInt / (2 * MaxSymbolLen)
	switchBit  = 1 << 24
	headerSize = 8
)

// ErrCorrupt is the error wrapped by every error this package returns for
// a malformed symbol table or compressed string. Match it with errors.Is.
var ErrCorrupt = errors.New("fsst: corrupt data")

// CorruptError describes malformed input. It wraps ErrCorrupt.
type CorruptError struct {
	// Offset is the byte offset of the problem in the symbol table or the
	// compressed input, or -1 when it concerns the input as a whole.
	Offset int64
	// Reason says what is wrong.
	Reason string
}

// Error implements the error interface.
func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return "fsst: corrupt data: " + e.Reason
	}
	return fmt.Sprintf("fsst: corrupt data at offset %d: %s", e.Offset, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// Table is an FSST symbol table. Build one with ParseTable or Train. A Table
// is immutable and safe for concurrent use.
type Table struct {
	// symbols[c] holds the bytes of the symbol of code c, little-endian;
	// bytes past lens[c] are kept as they were read but never emitted.
	symbols [256]uint64
	// lens[c] is the length of symbol c, and 0 for the escape code and
	// every code at or above n, which is how Decode spots them.
	lens [256]uint8
	n    int
	// compressed is the header's switch bit; when false strings are stored
	// as they are.
	compressed bool
	// suffixLim and terminator are carried from the header to AppendBytes.
	suffixLim, terminator uint8

	encOnce sync.Once
	enc     *encoder // built on first Encode
}

// ParseTable parses a symbol table in Lance's layout. b must be exactly
// TableSize bytes. Bytes after the length bytes are not checked. Errors wrap
// ErrCorrupt (as a *CorruptError). The Table does not keep b.
func ParseTable(b []byte) (*Table, error) {
	if len(b) != TableSize {
		return nil, corrupt(-1, "symbol table is %d bytes, want %d", len(b), TableSize)
	}
	h := binary.LittleEndian.Uint64(b)
	if h>>32 != magic {
		return nil, corrupt(0, "symbol table header %#016x lacks the FSST magic", h)
	}
	t := &Table{
		n:          int(h & 0xff),
		terminator: uint8(h >> 8),
		suffixLim:  uint8(h >> 16),
		compressed: h&switchBit != 0,
	}
	lensAt := headerSize + 8*t.n
	for c := range t.n {
		t.symbols[c] = binary.LittleEndian.Uint64(b[headerSize+8*c:])
		l := b[lensAt+c]
		if l == 0 || l > MaxSymbolLen {
			return nil, corrupt(int64(lensAt+c), "symbol %d has length %d, want 1..%d", c, l, MaxSymbolLen)
		}
		t.lens[c] = l
	}
	return t, nil
}

// AppendBytes appends the table in Lance's 2312-byte layout to dst.
func (t *Table) AppendBytes(dst []byte) []byte {
	h := uint64(magic)<<32 | uint64(t.suffixLim)<<16 | uint64(t.terminator)<<8 | uint64(t.n)
	if t.compressed {
		h |= switchBit
	}
	start := len(dst)
	dst = append(dst, make([]byte, TableSize)...)
	out := dst[start:]
	binary.LittleEndian.PutUint64(out, h)
	for c := range t.n {
		binary.LittleEndian.PutUint64(out[headerSize+8*c:], t.symbols[c])
		out[headerSize+8*t.n+c] = t.lens[c]
	}
	return dst
}

// NumSymbols returns the number of symbols in the table.
func (t *Table) NumSymbols() int { return t.n }

// Compressed reports whether strings under this table are FSST-compressed.
// When it returns false (the header's switch bit is clear), Decode and
// DecodeOffsets copy their input unchanged and Encode stores strings as
// they are.
func (t *Table) Compressed() bool { return t.compressed }

// Symbol returns the bytes of the symbol of code c, or nil if the table has
// no such code.
func (t *Table) Symbol(c byte) []byte {
	if t.lens[c] == 0 {
		return nil
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], t.symbols[c])
	return b[:t.lens[c]]
}

// Decode appends the decoded bytes of one compressed string, src, to dst and
// returns the extended slice. It fails, with an error wrapping ErrCorrupt,
// on a code the table does not define or an escape code in the last byte;
// dst then holds what was decoded before the bad code. Decode grows dst by
// at most 8*len(src) bytes of capacity.
func (t *Table) Decode(dst, src []byte) ([]byte, error) {
	if !t.compressed {
		return append(dst, src...), nil
	}
	if len(src) > maxInput {
		return dst, corrupt(-1, "compressed string of %d bytes is too long", len(src))
	}
	start := len(dst)
	dst = slices.Grow(dst, MaxSymbolLen*len(src))
	n, err := t.decode(dst[start:cap(dst)], src, 0)
	return dst[:start+n], err
}

// decode writes the decoding of src to the start of out and returns the
// number of bytes written. out must hold at least 8*len(src) bytes: every
// code may then store a whole 8-byte word, of which only the symbol's length
// counts. Since no code yields more than 8 bytes and an escape pair yields
// 1, after i codes at most 8*i bytes are written, so each 8-byte store ends
// inside out. base is the offset of src in the caller's input, for errors.
func (t *Table) decode(out, src []byte, base int64) (int, error) {
	if len(out) < MaxSymbolLen*len(src) {
		// Callers size out; this is a guard for the fast path's invariant.
		return 0, corrupt(base, "output buffer of %d bytes too small for %d codes", len(out), len(src))
	}
	pos, i := 0, 0
	for {
		p, k := t.decodeRun(out[pos:], src[i:])
		pos += p
		i += k
		if i >= len(src) {
			return pos, nil
		}
		// decodeRun stopped at a special code (the escape or an undefined
		// one): handle it here with the few codes after it, then go back.
		for stop := min(i+4, len(src)); i < stop; {
			c := src[i]
			switch l := t.lens[c]; {
			case l != 0:
				binary.LittleEndian.PutUint64(out[pos:], t.symbols[c])
				pos += int(l)
				i++
			case c == Escape:
				if i+1 >= len(src) {
					return pos, corrupt(base+int64(i), "escape code in the last byte")
				}
				out[pos] = src[i+1]
				pos++
				i += 2
			default:
				return pos, corrupt(base+int64(i), "code %d is undefined (table has %d symbols)", c, t.n)
			}
		}
		if i >= len(src) {
			return pos, nil
		}
	}
}

// anySpecial reports whether any of four symbol lengths is 0 (the code is
// the escape or undefined): 0-1 wraps to 0xff, which alone sets the top bit.
func anySpecial(l0, l1, l2, l3 uint8) bool {
	return ((l0-1)|(l1-1)|(l2-1)|(l3-1))&0x80 != 0
}

// DecodeOffsets decodes a Variable-style buffer of compressed strings:
// string k is src[srcOffsets[k]:srcOffsets[k+1]], for the len(srcOffsets)-1
// strings. It appends the decoded bytes of all strings to dstData and
// len(srcOffsets) offsets to dstOffsets, the first being len(dstData) on
// entry and each next one the end of a decoded string in the returned
// dstData. Offsets must not decrease and must lie within src; srcOffsets
// must not be empty. Errors wrap ErrCorrupt; on error the returned slices
// hold the strings decoded before the bad one. At most 8 times the
// compressed bytes are reserved in dstData.
func (t *Table) DecodeOffsets(dstData []byte, dstOffsets []int64, src []byte, srcOffsets []int64) ([]byte, []int64, error) {
	if len(srcOffsets) == 0 {
		return dstData, dstOffsets, corrupt(-1, "no offsets (want number of strings + 1)")
	}
	first, last := srcOffsets[0], srcOffsets[len(srcOffsets)-1]
	if first < 0 || last > int64(len(src)) || first > last {
		return dstData, dstOffsets, corrupt(-1, "offsets span [%d, %d) outside the %d compressed bytes", first, last, len(src))
	}
	dstOffsets = slices.Grow(dstOffsets, len(srcOffsets))
	base := len(dstData)
	dstOffsets = append(dstOffsets, int64(base))
	if !t.compressed {
		for k := 1; k < len(srcOffsets); k++ {
			if srcOffsets[k] < srcOffsets[k-1] {
				return dstData, dstOffsets, corrupt(-1, "offset %d (%d) is below offset %d (%d)", k, srcOffsets[k], k-1, srcOffsets[k-1])
			}
			dstOffsets = append(dstOffsets, int64(base)+srcOffsets[k]-first)
		}
		return append(dstData, src[first:last]...), dstOffsets, nil
	}
	if last-first > maxInput {
		return dstData, dstOffsets, corrupt(-1, "%d compressed bytes are too many", last-first)
	}
	dstData = slices.Grow(dstData, MaxSymbolLen*int(last-first))
	out := dstData[:cap(dstData)]
	pos := base
	for k := 1; k < len(srcOffsets); k++ {
		lo, hi := srcOffsets[k-1], srcOffsets[k]
		if hi < lo {
			return dstData[:pos], dstOffsets, corrupt(-1, "offset %d (%d) is below offset %d (%d)", k, hi, k-1, lo)
		}
		n, err := t.decode(out[pos:], src[lo:hi], lo)
		pos += n
		if err != nil {
			return dstData[:pos-n], dstOffsets, err
		}
		dstOffsets = append(dstOffsets, int64(pos))
	}
	return dstData[:pos], dstOffsets, nil
}
