package bitpack

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("bitpack.seed", 0, "seed for randomized tests (0 = time based)")

// testSeed returns the seed of a randomized test and logs it.
func testSeed(t testing.TB) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -bitpack.seed=%d)", s, s)
	return s
}

var wordWidths = []int{8, 16, 32, 64}

// refIndex is the layout rule of the package doc, written independently of
// the generator: the value index that row r of lane l carries.
func refIndex(r, l int) int {
	order := [8]int{0, 4, 2, 6, 1, 5, 3, 7}
	return order[r/8]*16 + (r%8)*128 + l
}

// refPack packs vals (1024 values) bit by bit at width w into T-bit words.
func refPack(T, w int, vals []uint64) []uint64 {
	lanes := 1024 / T
	out := make([]uint64, lanes*w)
	for l := 0; l < lanes; l++ {
		for r := 0; r < T; r++ {
			v := vals[refIndex(r, l)]
			for b := 0; b < w; b++ {
				pos := r*w + b
				if v>>b&1 == 1 {
					out[lanes*(pos/T)+l] |= 1 << (pos % T)
				}
			}
		}
	}
	return out
}

// refUnpack is the bit-by-bit inverse of refPack.
func refUnpack(T, w int, words []uint64) []uint64 {
	lanes := 1024 / T
	vals := make([]uint64, 1024)
	for l := 0; l < lanes; l++ {
		for r := 0; r < T; r++ {
			var v uint64
			for b := 0; b < w; b++ {
				pos := r*w + b
				v |= (words[lanes*(pos/T)+l] >> (pos % T) & 1) << b
			}
			vals[refIndex(r, l)] = v
		}
	}
	return vals
}

func toBytes(T int, words []uint64) []byte {
	b := make([]byte, len(words)*T/8)
	for i, v := range words {
		for k := 0; k < T/8; k++ {
			b[i*T/8+k] = byte(v >> (8 * k))
		}
	}
	return b
}

func fromBytes(T int, b []byte) []uint64 {
	words := make([]uint64, len(b)/(T/8))
	for i := range words {
		for k := 0; k < T/8; k++ {
			words[i] |= uint64(b[i*T/8+k]) << (8 * k)
		}
	}
	return words
}

func maskOf(w int) uint64 {
	if w == 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// valueSets returns named 1024-value inputs for width w. The random ones use
// the full mask, so the top bit of the width is set in about half the values.
func valueSets(rng *rand.Rand, T, w int) map[string][]uint64 {
	m := maskOf(w)
	sets := map[string][]uint64{}
	add := func(name string, f func(i int) uint64) {
		v := make([]uint64, 1024)
		for i := range v {
			v[i] = f(i)
		}
		sets[name] = v
	}
	add("zeros", func(int) uint64 { return 0 })
	add("max", func(int) uint64 { return m })
	add("random", func(int) uint64 { return rng.Uint64() & m })
	add("alternating", func(i int) uint64 {
		if i%2 == 0 {
			return m
		}
		return 0
	})
	add("sequential", func(i int) uint64 { return uint64(i) & m })
	add("one-hot", func(i int) uint64 {
		if w == 0 {
			return 0
		}
		return 1 << (i % w)
	})
	// Garbage above the width must be ignored by the packer.
	add("high-garbage", func(i int) uint64 { return rng.Uint64() & maskOf(T) })
	return sets
}

// packTyped packs with the typed API for word width T and returns the words.
func packTyped(T, w int, vals []uint64) []uint64 {
	n := 1024 * w / T
	out := make([]uint64, n)
	switch T {
	case 8:
		var in [1024]uint8
		for i, v := range vals {
			in[i] = uint8(v)
		}
		dst := make([]uint8, n)
		Pack8(w, dst, &in)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 16:
		var in [1024]uint16
		for i, v := range vals {
			in[i] = uint16(v)
		}
		dst := make([]uint16, n)
		Pack16(w, dst, &in)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 32:
		var in [1024]uint32
		for i, v := range vals {
			in[i] = uint32(v)
		}
		dst := make([]uint32, n)
		Pack32(w, dst, &in)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 64:
		var in [1024]uint64
		copy(in[:], vals)
		Pack64(w, out, &in)
	}
	return out
}

// unpackTyped unpacks words with the typed API for word width T.
func unpackTyped(T, w int, words []uint64) []uint64 {
	out := make([]uint64, 1024)
	switch T {
	case 8:
		src := make([]uint8, len(words))
		for i, v := range words {
			src[i] = uint8(v)
		}
		var dst [1024]uint8
		Unpack8(w, &dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 16:
		src := make([]uint16, len(words))
		for i, v := range words {
			src[i] = uint16(v)
		}
		var dst [1024]uint16
		Unpack16(w, &dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 32:
		src := make([]uint32, len(words))
		for i, v := range words {
			src[i] = uint32(v)
		}
		var dst [1024]uint32
		Unpack32(w, &dst, src)
		for i, v := range dst {
			out[i] = uint64(v)
		}
	case 64:
		var dst [1024]uint64
		Unpack64(w, &dst, words)
		copy(out, dst[:])
	}
	return out
}

func equalWords(a, b []uint64) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if a[i] != b[i] {
			return i, false
		}
	}
	return 0, true
}

// TestRoundTrip packs and unpacks every word width, every packed width and
// several value sets with the typed API, the byte API and the bit-by-bit
// reference, and requires all of them to agree.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	for _, T := range wordWidths {
		for w := 0; w <= T; w++ {
			for name, vals := range valueSets(rng, T, w) {
				t.Run(fmt.Sprintf("T%d/w%d/%s", T, w, name), func(t *testing.T) {
					want := make([]uint64, 1024)
					for i, v := range vals {
						want[i] = v & maskOf(w)
					}
					ref := refPack(T, w, vals)
					got := packTyped(T, w, vals)
					if i, ok := equalWords(got, ref); !ok {
						t.Fatalf("typed pack differs from reference at word %d", i)
					}
					if i, ok := equalWords(refUnpack(T, w, ref), want); !ok {
						t.Fatalf("reference round trip broken at %d", i)
					}
					if i, ok := equalWords(unpackTyped(T, w, ref), want); !ok {
						t.Fatalf("typed unpack differs at value %d", i)
					}

					// Byte API, once aligned and once misaligned.
					for _, off := range []int{0, 1} {
						srcBuf := make([]byte, 1024*T/8+off)
						src := srcBuf[off:]
						copy(src, toBytes(T, vals))
						packedBuf := make([]byte, 1024*w/8+off)
						packed := packedBuf[off:]
						if err := PackBlock(T, w, packed, src); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(packed, toBytes(T, ref)) {
							t.Fatalf("PackBlock (offset %d) differs from reference", off)
						}
						outBuf := make([]byte, 1024*T/8+off)
						out := outBuf[off:]
						if err := UnpackBlock(T, w, out, packed); err != nil {
							t.Fatal(err)
						}
						if i, ok := equalWords(fromBytes(T, out), want); !ok {
							t.Fatalf("UnpackBlock (offset %d) differs at value %d", off, i)
						}
					}
				})
			}
		}
	}
}

// TestHandVectors checks bytes worked out by hand from the layout rule in
// the package doc.
func TestHandVectors(t *testing.T) {
	type setVal struct {
		index int
		value uint64
	}
	type setByte struct {
		offset int
		value  byte
	}
	tests := []struct {
		name   string
		T, w   int
		values []setVal
		bytes  []setByte // every other packed byte is zero
	}{
		{
			// T=8, W=1: 128 lanes, rows 0-7 of lane l are values r*128+l and
			// bit r of byte l holds row r.
			name: "T8w1",
			T:    8, w: 1,
			values: []setVal{{0, 1}, {129, 1}, {1023, 1}, {5*128 + 3, 1}},
			bytes:  []setByte{{0, 0x01}, {1, 0x02}, {127, 0x80}, {3, 0x20}},
		},
		{
			// T=16, W=3: 64 lanes. Row 5 of lane 2 is value 5*128+2 = 642 at
			// bits 15-17: bit 15 of word 2 (byte 5 = 0x80), bits 0-1 of word
			// 66 (value 5 = 0b101, its high bits 0b10 → byte 132 = 0x02).
			// Row 8 of lane 0 is value order[1]*16 = 64 at bits 24-26: bits
			// 8-10 of word 64 → byte 129 = 0x07 for value 7.
			name: "T16w3",
			T:    16, w: 3,
			values: []setVal{{642, 5}, {64, 7}},
			bytes:  []setByte{{5, 0x80}, {132, 0x02}, {129, 0x07}},
		},
		{
			// T=64, W=64: plain copy in transposed order. Row 8 of lane 3
			// is value 64+3 = 67 and goes to word 16*8+3 = 131, bytes
			// 1048-1055 little-endian.
			name: "T64w64",
			T:    64, w: 64,
			values: []setVal{{67, 0x0102030405060708}},
			bytes: []setByte{{1048, 8}, {1049, 7}, {1050, 6}, {1051, 5},
				{1052, 4}, {1053, 3}, {1054, 2}, {1055, 1}},
		},
		{
			// T=32, W=20: 32 lanes. Row 1 of lane 0 is value 128 at bits
			// 20-39: bits 20-31 of word 0 take its low 12 bits, bits 0-7 of
			// word 32 the high 8. 0xABCDE → word 0 = 0xBCDE << 20 = 0xCDE00000
			// (bytes 0-3: 00 00 E0 CD), word 32 = 0xAB (byte 128).
			name: "T32w20",
			T:    32, w: 20,
			values: []setVal{{128, 0xABCDE}},
			bytes:  []setByte{{2, 0xE0}, {3, 0xCD}, {128, 0xAB}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vals := make([]byte, 1024*tc.T/8)
			for _, v := range tc.values {
				for k := 0; k < tc.T/8; k++ {
					vals[v.index*tc.T/8+k] = byte(v.value >> (8 * k))
				}
			}
			want := make([]byte, 1024*tc.w/8)
			for _, b := range tc.bytes {
				want[b.offset] = b.value
			}
			got := make([]byte, len(want))
			if err := PackBlock(tc.T, tc.w, got, vals); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("byte %d = %#02x, want %#02x", i, got[i], want[i])
					}
				}
				t.FailNow()
			}
			back := make([]byte, len(vals))
			if err := UnpackBlock(tc.T, tc.w, back, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, vals) {
				t.Fatal("unpack of hand vector differs")
			}
		})
	}
}

func TestSizeErrors(t *testing.T) {
	tests := []struct {
		name             string
		T, w, dstN, srcN int
	}{
		{"bad T", 12, 3, 1536, 384},
		{"T zero", 0, 0, 0, 0},
		{"w negative", 32, -1, 4096, 0},
		{"w above T", 16, 17, 2048, 2176},
		{"short src", 64, 20, 8192, 2559},
		{"long src", 64, 20, 8192, 2561},
		{"short dst", 32, 5, 4095, 640},
		{"nil everything", 64, 1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := UnpackBlock(tc.T, tc.w, make([]byte, tc.dstN), make([]byte, tc.srcN))
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("UnpackBlock: err = %v, want ErrCorrupt", err)
			}
			// The same sizes swapped are just as wrong for PackBlock.
			err = PackBlock(tc.T, tc.w, make([]byte, tc.srcN), make([]byte, tc.dstN))
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("PackBlock: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestBitWidth(t *testing.T) {
	tests := []struct {
		vals []uint64
		want int
	}{
		{nil, 0},
		{[]uint64{0, 0}, 0},
		{[]uint64{1}, 1},
		{[]uint64{3, 4}, 3},
		{[]uint64{1 << 63}, 64},
		{[]uint64{0xFFFFF, 7}, 20},
	}
	for _, tc := range tests {
		if got := BitWidth(tc.vals); got != tc.want {
			t.Errorf("BitWidth(%v) = %d, want %d", tc.vals, got, tc.want)
		}
	}
	if got := BitWidth([]uint8{0x80}); got != 8 {
		t.Errorf("BitWidth(uint8 0x80) = %d", got)
	}
	if got := BitWidth([]uint16{0x100}); got != 9 {
		t.Errorf("BitWidth(uint16 0x100) = %d", got)
	}
}

func TestNoAllocs(t *testing.T) {
	var dst [1024]uint64
	src := make([]uint64, 16*20)
	n := testing.AllocsPerRun(10, func() {
		Unpack64(20, &dst, src)
		Pack64(20, src, &dst)
	})
	if n != 0 {
		t.Errorf("typed kernels allocate %v times", n)
	}
	// A block on the caller's stack must stay there.
	var sink uint64
	n = testing.AllocsPerRun(10, func() {
		var vals [1024]uint64
		Unpack64(20, &vals, src)
		var words [320]uint64
		Pack64(20, words[:], &vals)
		sink += words[7]
	})
	if n != 0 {
		t.Errorf("typed kernels move a stack block to the heap (%v allocs)", n)
	}
	_ = sink
	b := make([]byte, 8192)
	p := make([]byte, 2560)
	n = testing.AllocsPerRun(10, func() {
		_ = UnpackBlock(64, 20, b, p)
		_ = PackBlock(64, 20, p, b)
	})
	if n != 0 {
		t.Errorf("byte API allocates %v times", n)
	}
}

// TestUnpackPartialWordsIgnored checks that extra trailing words in src are
// ignored by the typed API, as documented.
func TestUnpackExtraWords(t *testing.T) {
	src := make([]uint64, 16*3+5)
	for i := range src {
		src[i] = ^uint64(0)
	}
	var dst [1024]uint64
	Unpack64(3, &dst, src)
	for i, v := range dst {
		if v != 7 {
			t.Fatalf("value %d = %d, want 7", i, v)
		}
	}
}
