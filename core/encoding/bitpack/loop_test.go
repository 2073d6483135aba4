package bitpack

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// loopUnpack runs unpackLoop for word width T on words and returns the
// values widened to uint64.
func loopUnpack(T, w int, words []uint64) []uint64 {
	out := make([]uint64, BlockLen)
	switch T {
	case 8:
		src, dst := make([]uint8, len(words)), new([BlockLen]uint8)
		for i, v := range words {
			src[i] = uint8(v)
		}
		unpackLoop(w, dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 16:
		src, dst := make([]uint16, len(words)), new([BlockLen]uint16)
		for i, v := range words {
			src[i] = uint16(v)
		}
		unpackLoop(w, dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 32:
		src, dst := make([]uint32, len(words)), new([BlockLen]uint32)
		for i, v := range words {
			src[i] = uint32(v)
		}
		unpackLoop(w, dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 64:
		dst := new([BlockLen]uint64)
		unpackLoop(w, dst, words)
		copy(out, dst[:])
	}
	return out
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
	for _, w := range []int{1, 8, 16, 20, 32, 48, 63, 64} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			src := make([]uint64, 16*w)
			for i := range src {
				src[i] = rand.Uint64()
			}
			var dst [1024]uint64
			b.SetBytes(8 * BlockLen)
			for b.Loop() {
				unpackLoop(w, &dst, src)
			}
			reportValues(b)
		})
	}
}
