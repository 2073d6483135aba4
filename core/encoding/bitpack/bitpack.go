package bitpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// BlockLen is the number of values in one FastLanes block.
const BlockLen = 1024

// ErrCorrupt is returned, wrapped with details, when a word width, packed
// width or buffer size is invalid. Match it with errors.Is.
var ErrCorrupt = errors.New("bitpack: corrupt or invalid block")

// PackedBytes returns the size in bytes of one block packed at width w, 1024*w/8.
// It does not check w.
func PackedBytes(w int) int { return BlockLen * w / 8 }

// checkWidths reports an error unless T is a supported word width and
// 0 ≤ w ≤ T.
func checkWidths(T, w int) error {
	switch T {
	case 8, 16, 32, 64:
	default:
		return fmt.Errorf("%w: word width %d is not 8, 16, 32 or 64", ErrCorrupt, T)
	}
	if w < 0 || w > T {
		return fmt.Errorf("%w: packed width %d out of range 0..%d", ErrCorrupt, w, T)
	}
	return nil
}

// UnpackBlock unpacks one FastLanes block of 1024 values of T bits each,
// packed at width w (0 ≤ w ≤ T). src must hold exactly 1024*w/8 bytes
// (little-endian words of T bits); dst receives the 1024 values as
// little-endian T-bit words and must be exactly 1024*T/8 bytes long.
// It returns an error wrapping ErrCorrupt, and never panics, on a bad width
// or size. dst and src must not overlap.
func UnpackBlock(T, w int, dst, src []byte) error {
	if err := checkWidths(T, w); err != nil {
		return err
	}
	if len(src) != PackedBytes(w) {
		return fmt.Errorf("%w: packed block of width %d is %d bytes, want %d", ErrCorrupt, w, len(src), PackedBytes(w))
	}
	if len(dst) != PackedBytes(T) {
		return fmt.Errorf("%w: output block of %d-bit words is %d bytes, want %d", ErrCorrupt, T, len(dst), PackedBytes(T))
	}
	switch T {
	case 8:
		Unpack8(w, (*[BlockLen]uint8)(dst), src)
	default:
		unpackBytes(T, w, dst, src)
	}
	return nil
}

// PackBlock is the inverse of UnpackBlock: it packs the 1024 T-bit values of
// src (exactly 1024*T/8 bytes, little-endian) at width w into dst, which must
// be exactly 1024*w/8 bytes long. Bits above w in the values are ignored.
// It returns an error wrapping ErrCorrupt, and never panics, on a bad width
// or size. dst and src must not overlap.
func PackBlock(T, w int, dst, src []byte) error {
	if err := checkWidths(T, w); err != nil {
		return err
	}
	if len(src) != PackedBytes(T) {
		return fmt.Errorf("%w: input block of %d-bit words is %d bytes, want %d", ErrCorrupt, T, len(src), PackedBytes(T))
	}
	if len(dst) != PackedBytes(w) {
		return fmt.Errorf("%w: packed block of width %d is %d bytes, want %d", ErrCorrupt, w, len(dst), PackedBytes(w))
	}
	switch T {
	case 8:
		Pack8(w, dst, (*[BlockLen]uint8)(src))
	default:
		packBytes(T, w, dst, src)
	}
	return nil
}

// word is the set of unsigned word types a block can hold.
type word interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// wordBytes returns the size of U in bytes.
func wordBytes[U word]() int { return bits.Len64(uint64(^U(0))) / 8 }

// unpackBytes unpacks a checked block of 16-, 32- or 64-bit words. It works
// in place when a buffer can be viewed as words (see asWords) and copies
// through stack arrays otherwise. The kernels are called directly, not
// through func values, so the arrays stay on the stack.
func unpackBytes(T, w int, dst, src []byte) {
	switch T {
	case 16:
		var inBuf, outBuf [BlockLen]uint16
		in := viewOrLoad(inBuf[:len(src)/2], src)
		if out, ok := asWords[uint16](dst); ok {
			unpack16(w, (*[BlockLen]uint16)(out), in)
		} else {
			unpack16(w, &outBuf, in)
			storeWords(dst, outBuf[:])
		}
	case 32:
		var inBuf, outBuf [BlockLen]uint32
		in := viewOrLoad(inBuf[:len(src)/4], src)
		if out, ok := asWords[uint32](dst); ok {
			unpack32(w, (*[BlockLen]uint32)(out), in)
		} else {
			unpack32(w, &outBuf, in)
			storeWords(dst, outBuf[:])
		}
	case 64:
		var inBuf, outBuf [BlockLen]uint64
		in := viewOrLoad(inBuf[:len(src)/8], src)
		if out, ok := asWords[uint64](dst); ok {
			unpack64(w, (*[BlockLen]uint64)(out), in)
		} else {
			unpack64(w, &outBuf, in)
			storeWords(dst, outBuf[:])
		}
	}
}

// packBytes is the packing counterpart of unpackBytes.
func packBytes(T, w int, dst, src []byte) {
	switch T {
	case 16:
		var inBuf, outBuf [BlockLen]uint16
		in := (*[BlockLen]uint16)(viewOrLoad(inBuf[:], src))
		if out, ok := asWords[uint16](dst); ok {
			pack16(w, out, in)
		} else {
			out := outBuf[:len(dst)/2]
			pack16(w, out, in)
			storeWords(dst, out)
		}
	case 32:
		var inBuf, outBuf [BlockLen]uint32
		in := (*[BlockLen]uint32)(viewOrLoad(inBuf[:], src))
		if out, ok := asWords[uint32](dst); ok {
			pack32(w, out, in)
		} else {
			out := outBuf[:len(dst)/4]
			pack32(w, out, in)
			storeWords(dst, out)
		}
	case 64:
		var inBuf, outBuf [BlockLen]uint64
		in := (*[BlockLen]uint64)(viewOrLoad(inBuf[:], src))
		if out, ok := asWords[uint64](dst); ok {
			pack64(w, out, in)
		} else {
			out := outBuf[:len(dst)/8]
			pack64(w, out, in)
			storeWords(dst, out)
		}
	}
}

// viewOrLoad returns src viewed as words if possible, and otherwise decodes
// it into buf, which must hold exactly len(src)/size(U) words, and returns buf.
func viewOrLoad[U word](buf []U, src []byte) []U {
	if v, ok := asWords[U](src); ok {
		return v
	}
	loadWords(buf, src)
	return buf
}

// loadWords decodes len(dst) little-endian words from src.
func loadWords[U word](dst []U, src []byte) {
	switch d := any(dst).(type) {
	case []uint16:
		for i := range d {
			d[i] = binary.LittleEndian.Uint16(src[2*i:])
		}
	case []uint32:
		for i := range d {
			d[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
	case []uint64:
		for i := range d {
			d[i] = binary.LittleEndian.Uint64(src[8*i:])
		}
	}
}

// storeWords encodes src as little-endian words into dst.
func storeWords[U word](dst []byte, src []U) {
	switch s := any(src).(type) {
	case []uint16:
		for i, v := range s {
			binary.LittleEndian.PutUint16(dst[2*i:], v)
		}
	case []uint32:
		for i, v := range s {
			binary.LittleEndian.PutUint32(dst[4*i:], v)
		}
	case []uint64:
		for i, v := range s {
			binary.LittleEndian.PutUint64(dst[8*i:], v)
		}
	}
}

// Unpack64 unpacks one block of 64-bit values packed at width w into dst.
// It panics if w is not in 0..64 or src holds fewer than 16*w words (the
// packed size, 1024*w/64); decoders must check both first. Extra words in
// src are ignored. It allocates nothing.
func Unpack64(w int, dst *[BlockLen]uint64, src []uint64) { unpack64(w, dst, src) }

// Unpack32 unpacks one block of 32-bit values packed at width w into dst.
// It panics if w is not in 0..32 or src holds fewer than 32*w words; extra
// words are ignored. It allocates nothing.
func Unpack32(w int, dst *[BlockLen]uint32, src []uint32) { unpack32(w, dst, src) }

// Unpack16 unpacks one block of 16-bit values packed at width w into dst.
// It panics if w is not in 0..16 or src holds fewer than 64*w words; extra
// words are ignored. It allocates nothing.
func Unpack16(w int, dst *[BlockLen]uint16, src []uint16) { unpack16(w, dst, src) }

// Unpack8 unpacks one block of 8-bit values packed at width w into dst.
// It panics if w is not in 0..8 or src holds fewer than 128*w bytes; extra
// bytes are ignored. It allocates nothing.
func Unpack8(w int, dst *[BlockLen]uint8, src []uint8) { unpack8(w, dst, src) }

// Pack64 packs the 1024 values of src at width w into the first 16*w words
// of dst; bits above w are ignored. It panics if w is not in 0..64 or dst is
// shorter than 16*w words. It allocates nothing.
func Pack64(w int, dst []uint64, src *[BlockLen]uint64) { pack64(w, dst, src) }

// Pack32 packs the 1024 values of src at width w into the first 32*w words
// of dst; bits above w are ignored. It panics if w is not in 0..32 or dst is
// shorter than 32*w words. It allocates nothing.
func Pack32(w int, dst []uint32, src *[BlockLen]uint32) { pack32(w, dst, src) }

// Pack16 packs the 1024 values of src at width w into the first 64*w words
// of dst; bits above w are ignored. It panics if w is not in 0..16 or dst is
// shorter than 64*w words. It allocates nothing.
func Pack16(w int, dst []uint16, src *[BlockLen]uint16) { pack16(w, dst, src) }

// Pack8 packs the 1024 values of src at width w into the first 128*w bytes
// of dst; bits above w are ignored. It panics if w is not in 0..8 or dst is
// shorter than 128*w bytes. It allocates nothing.
func Pack8(w int, dst []uint8, src *[BlockLen]uint8) { pack8(w, dst, src) }

// BitWidth returns the number of bits needed to hold the largest of values,
// the smallest w that packs them losslessly; 0 if all are zero or there are
// none.
func BitWidth[U word](values []U) int {
	var or U
	for _, v := range values {
		or |= v
	}
	return bits.Len64(uint64(or))
}
