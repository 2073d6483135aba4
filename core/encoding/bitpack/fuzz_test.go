package bitpack

import (
	"bytes"
	"testing"
)

// fuzzWidths picks a word width and a packed width from two fuzz bytes.
// The packed width may be out of range on purpose.
func fuzzWidths(a, b byte) (T, w int) {
	T = wordWidths[a%4]
	if a >= 128 {
		T = int(a) // unsupported word widths must be refused too
	}
	return T, int(b) - 4
}

// FuzzUnpack feeds arbitrary bytes to UnpackBlock. Nothing may panic, and a
// block that unpacks must pack back to the same bytes and agree with the
// bit-by-bit reference. Bit 0 of fix resizes src to the size its widths
// call for (so the fuzzer reaches the kernels often); the other bits shift
// the size of dst away from the right one.
func FuzzUnpack(f *testing.F) {
	f.Add(byte(3), byte(24), byte(0), bytes.Repeat([]byte{0xA5}, 2560))
	f.Add(byte(0), byte(5), byte(1), bytes.Repeat([]byte{0xFF, 0x01}, 64))
	f.Add(byte(1), byte(4), byte(0), []byte{})
	f.Add(byte(2), byte(36), byte(1), []byte{1, 2, 3, 4, 5, 6, 7})
	f.Add(byte(200), byte(7), byte(2), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, a, b, fix byte, src []byte) {
		T, w := fuzzWidths(a, b)
		if fix&1 == 1 && w >= 0 && w <= 64 {
			n := 1024 * w / 8
			if len(src) == 0 {
				src = make([]byte, n)
			} else {
				src = bytes.Repeat(src, n/len(src)+1)[:n]
			}
		}
		dstLen := 1024*T/8 + int(int8(fix))>>1
		if dstLen < 0 || dstLen > 1<<15 {
			dstLen = 0
		}
		dst := make([]byte, dstLen)
		if err := UnpackBlock(T, w, dst, src); err != nil {
			return
		}
		again := make([]byte, len(src))
		if err := PackBlock(T, w, again, dst); err != nil {
			t.Fatalf("PackBlock after UnpackBlock: %v", err)
		}
		if !bytes.Equal(again, src) {
			t.Fatalf("T=%d w=%d: unpack then pack changed the block", T, w)
		}
		if i, ok := equalWords(fromBytes(T, dst), refUnpack(T, w, fromBytes(T, src))); !ok {
			t.Fatalf("T=%d w=%d: differs from reference at value %d", T, w, i)
		}
	})
}

// FuzzRoundTrip packs arbitrary values (bits above the width included) and
// unpacks them again, comparing with the masked input and the reference.
func FuzzRoundTrip(f *testing.F) {
	f.Add(byte(3), byte(24), []byte("some values to pack"))
	f.Add(byte(0), byte(4), bytes.Repeat([]byte{0xFF}, 1024))
	f.Add(byte(2), byte(36), []byte{0x80, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, a, b byte, seed []byte) {
		T := wordWidths[a%4]
		w := int(b) % (T + 1)
		// Fill the block by repeating the fuzz input.
		vals := make([]byte, 1024*T/8)
		if len(seed) > 0 {
			for i := range vals {
				vals[i] = seed[i%len(seed)] ^ byte(i/len(seed))
			}
		}
		packed := make([]byte, 1024*w/8)
		if err := PackBlock(T, w, packed, vals); err != nil {
			t.Fatal(err)
		}
		words := fromBytes(T, vals)
		if !bytes.Equal(packed, toBytes(T, refPack(T, w, words))) {
			t.Fatalf("T=%d w=%d: packed bytes differ from reference", T, w)
		}
		out := make([]byte, len(vals))
		if err := UnpackBlock(T, w, out, packed); err != nil {
			t.Fatal(err)
		}
		got := fromBytes(T, out)
		for i, v := range words {
			if got[i] != v&maskOf(w) {
				t.Fatalf("T=%d w=%d: value %d = %#x, want %#x", T, w, i, got[i], v&maskOf(w))
			}
		}
	})
}
