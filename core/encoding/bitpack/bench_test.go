package bitpack

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// reportValues reports throughput as values per second (b.SetBytes counts
// unpacked bytes alongside).
func reportValues(b *testing.B) {
	b.ReportMetric(float64(b.N)*BlockLen/b.Elapsed().Seconds(), "values/s")
}

func BenchmarkUnpack64(b *testing.B) { benchUnpack64(b, Unpack64) }

// benchUnpack64 times unpack on random blocks of several widths.
func benchUnpack64(b *testing.B, unpack func(w int, dst *[BlockLen]uint64, src []uint64)) {
	for _, w := range []int{1, 8, 16, 20, 32, 48, 63, 64} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			src := make([]uint64, 16*w)
			for i := range src {
				src[i] = rand.Uint64()
			}
			var dst [1024]uint64
			b.SetBytes(8 * BlockLen)
			for b.Loop() {
				unpack(w, &dst, src)
			}
			reportValues(b)
		})
	}
}

func BenchmarkUnpack32(b *testing.B) {
	for _, w := range []int{1, 8, 12, 20, 32} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			src := make([]uint32, 32*w)
			for i := range src {
				src[i] = rand.Uint32()
			}
			var dst [1024]uint32
			b.SetBytes(4 * BlockLen)
			for b.Loop() {
				Unpack32(w, &dst, src)
			}
			reportValues(b)
		})
	}
}

func BenchmarkUnpack16(b *testing.B) {
	for _, w := range []int{1, 3, 9, 16} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			src := make([]uint16, 64*w)
			var dst [1024]uint16
			b.SetBytes(2 * BlockLen)
			for b.Loop() {
				Unpack16(w, &dst, src)
			}
			reportValues(b)
		})
	}
}

func BenchmarkUnpackBlock(b *testing.B) {
	for _, T := range wordWidths {
		for _, w := range []int{T / 4, T/2 + 1} {
			for _, aligned := range []bool{true, false} {
				name := fmt.Sprintf("T%d/w%d/aligned=%v", T, w, aligned)
				b.Run(name, func(b *testing.B) {
					off := 0
					if !aligned {
						off = 1
					}
					src := make([]byte, 1024*w/8+off)[off:]
					dst := make([]byte, 1024*T/8+off)[off:]
					b.SetBytes(int64(len(dst)))
					for b.Loop() {
						if err := UnpackBlock(T, w, dst, src); err != nil {
							b.Fatal(err)
						}
					}
					reportValues(b)
				})
			}
		}
	}
}

func BenchmarkPack64(b *testing.B) {
	for _, w := range []int{8, 20, 64} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			var src [1024]uint64
			for i := range src {
				src[i] = rand.Uint64()
			}
			dst := make([]uint64, 16*w)
			b.SetBytes(8 * BlockLen)
			for b.Loop() {
				Pack64(w, dst, &src)
			}
			reportValues(b)
		})
	}
}
