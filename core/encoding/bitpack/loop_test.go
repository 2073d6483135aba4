package bitpack

import (
	"math/rand/v2"
	"testing"
)

// loopUnpackAs runs unpackLoop for words of type U and returns the values
// widened to uint64.
func loopUnpackAs[U word](w int, words []uint64) []uint64 {
	src, dst := make([]U, len(words)), new([BlockLen]U)
	for i, v := range words {
		src[i] = U(v)
	}
	unpackLoop(w, dst, src)
	out := make([]uint64, BlockLen)
	for i, v := range dst {
		out[i] = uint64(v)
	}
	return out
}

// loopUnpack runs unpackLoop for word width T on words.
func loopUnpack(T, w int, words []uint64) []uint64 {
	switch T {
	case 8:
		return loopUnpackAs[uint8](w, words)
	case 16:
		return loopUnpackAs[uint16](w, words)
	case 32:
		return loopUnpackAs[uint32](w, words)
	}
	return loopUnpackAs[uint64](w, words)
}

// TestUnpackLoop checks the one-loop unpacker of the WebAssembly builds
// against the bit-by-bit reference for every word width, packed width and
// value set, with words past the block's end present (they must be ignored).
func TestUnpackLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for _, T := range wordWidths {
		for w := 0; w <= T; w++ {
			for name, vals := range valueSets(rng, T, w) {
				words := refPack(T, w, vals)
				want := refUnpack(T, w, words)
				extra := append(words, rng.Uint64()&maskOf(T), rng.Uint64()&maskOf(T))
				got := loopUnpack(T, w, extra)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("T=%d w=%d %s: value %d = %#x, want %#x", T, w, name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestUnpackLoopPanics checks that a bad width or a short source panics (the
// exported functions check both before they get here).
func TestUnpackLoopPanics(t *testing.T) {
	for _, c := range []struct {
		w, words int
	}{{65, 64 * 16}, {-1, 0}, {3, 3*16 - 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("w=%d with %d words: no panic", c.w, c.words)
				}
			}()
			unpackLoop(c.w, new([BlockLen]uint64), make([]uint64, c.words))
		}()
	}
}

// BenchmarkUnpackLoop64 is BenchmarkUnpack64 for unpackLoop, to compare the
// two on the same machine.
func BenchmarkUnpackLoop64(b *testing.B) {
	benchUnpack64(b, func(w int, dst *[BlockLen]uint64, src []uint64) { unpackLoop(w, dst, src) })
}
