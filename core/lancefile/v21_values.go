package lancefile

import (
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// Decoded values of one leaf column, as the 2.1 page decoders produce them.
//
// A page decodes all of its chunks into one vals whose buffers are owned by
// the page; batches take zero-copy slices of it and only copy when a batch
// spans two pages.

// valKind says how a leaf's values are laid out.
type valKind uint8

const (
	kindFixed valKind = iota // width bytes per value, little-endian
	kindBool                 // one bit per value, LSB first
	kindVar                  // offsets into data
)

func (k valKind) String() string {
	switch k {
	case kindFixed:
		return "fixed-width"
	case kindBool:
		return "bitmap"
	case kindVar:
		return "variable-width"
	}
	return "?"
}

// vals holds n decoded values.
type vals struct {
	kind  valKind
	width int // bytes per value (kindFixed)
	n     int
	// data holds the values (kindFixed: n*width bytes; kindBool: bits boff
	// to boff+n; kindVar: the bytes offs point into).
	data []byte
	boff int     // kindBool: bit offset of value 0
	offs []int64 // kindVar: n+1 non-decreasing offsets into data
	// zero marks n zero (or empty) values with no buffers, as all-null
	// pages have.
	zero bool
	// constant marks n copies of scalar with no buffers, as 2.2's constant
	// pages have (scalar: the value's bytes, for booleans 0 or 1); expand
	// makes the buffers.
	constant bool
	scalar   []byte
	// blob marks descriptors of blob values (blobLegacy), which a batch
	// resolves before it becomes an array; ext is what a resolved blob v2
	// batch has besides the bytes (v22_blob.go).
	blob uint8
	ext  *blobExt
	// items, for fixed-size lists whose items may be null, holds the item
	// validity bitmap (dim bits per value) from bit ioff; nil when every
	// item is valid.
	items []byte
	ioff  int
	dim   int
}

// slice returns values [i, j) without copying.
func (v *vals) slice(i, j int) vals {
	out := vals{kind: v.kind, width: v.width, n: j - i, zero: v.zero, dim: v.dim, constant: v.constant, scalar: v.scalar, blob: v.blob}
	if v.zero || v.constant {
		return out
	}
	if v.items != nil {
		b := v.ioff + i*v.dim
		out.items = v.items[b/8:]
		out.ioff = b % 8
	}
	switch v.kind {
	case kindFixed:
		out.data = v.data[i*v.width : j*v.width : j*v.width]
	case kindBool:
		b := v.boff + i
		out.data = v.data[b/8:]
		out.boff = b % 8
	case kindVar:
		out.data = v.data
		out.offs = v.offs[i : j+1 : j+1]
	}
	return out
}

// valBuilder accumulates values of one kind.
type valBuilder struct {
	kind  valKind
	width int
	n     int
	data  []byte
	offs  []int64 // kindVar: starts with 0
	// items is the item validity of fixed-size lists (dim bits per value),
	// nil until some value has a null item.
	items []byte
	dim   int
}

// appendItems appends the item validity of k fixed-size-list values (src
// nil: all valid), before the values themselves are added.
func (b *valBuilder) appendItems(src []byte, off, k int) {
	if src == nil && b.items == nil {
		return
	}
	at := b.n * b.dim
	need := (at + k*b.dim + 7) / 8
	if b.items == nil {
		b.items = make([]byte, 0, need)
		for len(b.items) < need {
			b.items = append(b.items, 0)
		}
		bitutil.SetBitsTo(b.items, 0, int64(at), true)
	}
	for len(b.items) < need {
		b.items = append(b.items, 0)
	}
	if src == nil {
		bitutil.SetBitsTo(b.items, int64(at), int64(k*b.dim), true)
	} else {
		bitutil.CopyBitmap(src, off, k*b.dim, b.items, at)
	}
}

func newValBuilder(kind valKind, width, capValues int) *valBuilder {
	b := &valBuilder{kind: kind, width: width}
	switch kind {
	case kindFixed:
		b.data = alignedBytes(0, capValues*width)
	case kindBool:
		b.data = make([]byte, 0, (capValues+7)/8)
	case kindVar:
		b.offs = make([]int64, 1, capValues+1)
	}
	return b
}

// alignedBytes returns a byte slice of length n and capacity at least c whose
// start is 8-byte aligned, so it can be viewed as 64-bit words.
func alignedBytes(n, c int) []byte {
	c = max(n, c)
	if c == 0 {
		return []byte{}
	}
	w := make([]uint64, (c+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)[:n]
}

// grow extends a fixed-width builder by k values and returns their bytes.
func (b *valBuilder) grow(k int) []byte {
	need := len(b.data) + k*b.width
	if need > cap(b.data) {
		nd := alignedBytes(len(b.data), max(need, 2*cap(b.data)))
		copy(nd, b.data)
		b.data = nd
	}
	start := len(b.data)
	b.data = b.data[:need]
	b.n += k
	return b.data[start:need]
}

// appendBits appends k bits of src starting at bit off.
func (b *valBuilder) appendBits(src []byte, off, k int) {
	need := (b.n + k + 7) / 8
	for len(b.data) < need {
		b.data = append(b.data, 0)
	}
	bitutil.CopyBitmap(src, off, k, b.data, b.n)
	b.n += k
}

// appendVar appends one variable-width value.
func (b *valBuilder) appendVar(v []byte) {
	b.data = append(b.data, v...)
	b.offs = append(b.offs, int64(len(b.data)))
	b.n++
}

// appendVals appends v, which must be of the builder's kind.
func (b *valBuilder) appendVals(v *vals) error {
	if v.kind != b.kind || (v.kind == kindFixed && v.width != b.width) {
		return corruptf("pages mix %s (width %d) and %s (width %d) values", b.kind, b.width, v.kind, v.width)
	}
	if v.constant {
		e, err := v.expand()
		if err != nil {
			return err
		}
		v = &e
	}
	switch b.kind {
	case kindFixed:
		if b.dim > 0 && !v.zero {
			b.appendItems(v.items, v.ioff, v.n)
		} else if b.dim > 0 {
			b.appendItems(nil, 0, v.n)
		}
		dst := b.grow(v.n)
		if v.zero {
			clear(dst)
		} else {
			copy(dst, v.data)
		}
	case kindBool:
		if v.zero {
			need := (b.n + v.n + 7) / 8
			for len(b.data) < need {
				b.data = append(b.data, 0)
			}
			bitutil.SetBitsTo(b.data, int64(b.n), int64(v.n), false)
			b.n += v.n
		} else {
			b.appendBits(v.data, v.boff, v.n)
		}
	case kindVar:
		if v.zero {
			last := b.offs[len(b.offs)-1]
			for range v.n {
				b.offs = append(b.offs, last)
			}
			b.n += v.n
			return nil
		}
		lo, hi := v.offs[0], v.offs[v.n]
		b.data = append(b.data, v.data[lo:hi]...)
		base := int64(len(b.data)) - hi
		for _, o := range v.offs[1:] {
			b.offs = append(b.offs, o+base)
		}
		b.n += v.n
	}
	return nil
}

func (b *valBuilder) finish() vals {
	v := vals{kind: b.kind, width: b.width, n: b.n, data: b.data, items: b.items, dim: b.dim}
	if b.kind == kindVar {
		v.offs = b.offs
	}
	return v
}

// checkVarOffsets checks that offs is non-decreasing and within [0, size].
func checkVarOffsets(offs []int64, size int) error {
	prev := int64(0)
	if len(offs) > 0 {
		prev = offs[0]
	}
	for _, o := range offs {
		if o < prev || o > int64(size) {
			return corruptf("variable-width offset %d outside [%d, %d]", o, prev, size)
		}
		prev = o
	}
	return nil
}

// u16s views an 8-byte aligned little-endian byte slice as uint16s, or copies
// it when it is not aligned.
func u16s(b []byte) []uint16 {
	n := len(b) / 2
	if n == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%2 == 0 && littleEndian {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return out
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// readUint reads an unsigned little-endian integer of w bytes (1, 2, 4, 8).
func readUint(b []byte, w int) uint64 {
	switch w {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(b[0]) | uint64(b[1])<<8
	case 4:
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
	default:
		var v uint64
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
}

// toInt32Offsets rebases int64 offsets to start at zero as int32s.
func toInt32Offsets(offs []int64) ([]int32, error) {
	out := make([]int32, len(offs))
	if len(offs) == 0 {
		return out, nil
	}
	base := offs[0]
	if offs[len(offs)-1]-base > math.MaxInt32 {
		return nil, unsupportedf("%d bytes of string data do not fit 32-bit offsets", offs[len(offs)-1]-base)
	}
	for i, o := range offs {
		out[i] = int32(o - base)
	}
	return out, nil
}
