package lancefile

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// refLookup is the dictionary value index j names, or w zero bytes when j
// is out of range.
func refLookup(dict []byte, w int, j uint64) []byte {
	if j < uint64(len(dict)/w) {
		return dict[int(j)*w : int(j+1)*w]
	}
	return make([]byte, w)
}

// offsetCopy returns a copy of b starting at byte off of its allocation,
// so that callers get aligned (off 0) and unaligned slices alike.
func offsetCopy(b []byte, off int) []byte {
	out := alignedBytes(len(b)+off, len(b)+off)[off:]
	copy(out, b)
	return out
}

// TestDictGatherMatchesReference checks the gathers of dictionary pages
// (run-length encoded indices looked up once a run, u32 indices of 4- and
// 8-byte dictionaries, the fills of runs) against a plain model on random
// dictionaries and indices, out-of-range indices and unaligned buffers
// included, and that run lengths that do not cover the chunk are refused.
func TestDictGatherMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	for trial := 0; trial < 2000; trial++ {
		w := []int{4, 8}[rng.IntN(2)]
		nd := 1 + rng.IntN(300)
		dict := make([]byte, nd*w)
		for i := range dict {
			dict[i] = byte(rng.Uint32())
		}
		dict = offsetCopy(dict, rng.IntN(2)*(1+rng.IntN(w-1)))
		index := func() uint32 {
			if rng.IntN(10) == 0 { // null slots carry arbitrary indices
				return uint32(nd + rng.IntN(1000))
			}
			return uint32(rng.IntN(nd))
		}

		// Run-length encoded indices.
		runs := rng.IntN(40)
		values := make([]byte, 4*runs)
		lengths := make([]byte, runs)
		var want []byte
		for r := 0; r < runs; r++ {
			j := index()
			binary.LittleEndian.PutUint32(values[4*r:], j)
			lengths[r] = byte(rng.IntN(256))
			for k := 0; k < int(lengths[r]); k++ {
				want = append(want, refLookup(dict, w, uint64(j))...)
			}
		}
		total := len(want) / w
		n := total
		if total > 0 && rng.IntN(4) == 0 {
			n = rng.IntN(total) // a chunk ends inside the last runs
		}
		b := newValBuilder(kindFixed, w, 0)
		prefix := rng.IntN(5)
		b.grow(prefix)
		if err := gatherRle(values, lengths, n, dict, w, b); err != nil {
			t.Fatalf("trial %d: gatherRle: %v", trial, err)
		}
		if got := b.data[prefix*w:]; b.n != prefix+n || !bytes.Equal(got, want[:n*w]) {
			t.Fatalf("trial %d: gatherRle of %d values (w %d, %d runs) differs from the model", trial, n, w, runs)
		}
		// The same runs through the index decoder, then the gather.
		ib := newValBuilder(kindFixed, 4, 0)
		if err := decodeRle(values, lengths, n, 4, ib); err != nil {
			t.Fatalf("trial %d: decodeRle: %v", trial, err)
		}
		out := make([]byte, n*w)
		gatherFixed32(out, ib.data, dict, w)
		if !bytes.Equal(out, want[:n*w]) {
			t.Fatalf("trial %d: gatherFixed32 of run-length decoded indices differs from the model", trial)
		}
		if err := gatherRle(values, lengths, total+1+rng.IntN(3), dict, w, newValBuilder(kindFixed, w, 0)); err == nil {
			t.Fatalf("trial %d: runs covering %d values accepted for more", trial, total)
		}

		// u32 indices, aligned or not, into aligned or unaligned output.
		m := rng.IntN(600)
		idx := make([]byte, 4*m)
		want = want[:0]
		for i := 0; i < m; i++ {
			j := index()
			binary.LittleEndian.PutUint32(idx[4*i:], j)
			want = append(want, refLookup(dict, w, uint64(j))...)
		}
		idx = offsetCopy(idx, rng.IntN(2)*(1+rng.IntN(3)))
		dst := offsetCopy(bytes.Repeat([]byte{0xee}, m*w), rng.IntN(2)*(1+rng.IntN(w-1)))
		gatherFixed32(dst, idx, dict, w)
		if !bytes.Equal(dst, want) {
			t.Fatalf("trial %d: gatherFixed32 of %d indices (w %d) differs from the model", trial, m, w)
		}
	}
	// Malformed runs.
	b := newValBuilder(kindFixed, 8, 0)
	if err := gatherRle(make([]byte, 6), make([]byte, 1), 1, make([]byte, 8), 8, b); err == nil {
		t.Error("run values of 6 bytes accepted as u32 indices")
	}
	if err := gatherRle(make([]byte, 8), make([]byte, 1), 1, make([]byte, 8), 8, b); err == nil {
		t.Error("two run values with one run length accepted")
	}
}

// TestRleFills checks run-length decoding of every value width against a
// plain expansion, and the word fills on unaligned buffers.
func TestRleFills(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := 0; trial < 500; trial++ {
		w := []int{1, 2, 4, 8, 16}[rng.IntN(5)]
		runs := rng.IntN(30)
		values := make([]byte, w*runs)
		for i := range values {
			values[i] = byte(rng.Uint32())
		}
		lengths := make([]byte, runs)
		var want []byte
		for r := range lengths {
			lengths[r] = byte(rng.IntN(256))
			want = append(want, bytes.Repeat(values[r*w:(r+1)*w], int(lengths[r]))...)
		}
		b := newValBuilder(kindFixed, w, 0)
		if err := decodeRle(values, lengths, len(want)/w, w, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.data, want) {
			t.Fatalf("trial %d: decodeRle of width %d differs", trial, w)
		}
	}
	for off := 0; off < 8; off++ {
		d := offsetCopy(make([]byte, 64), off)
		fill64(d, 0x0102030405060708)
		fill32(d[:32], 0x0a0b0c0d)
		want := append(bytes.Repeat([]byte{0x0d, 0x0c, 0x0b, 0x0a}, 8), bytes.Repeat([]byte{8, 7, 6, 5, 4, 3, 2, 1}, 4)...)
		if !bytes.Equal(d, want) {
			t.Fatalf("fills at offset %d: %x", off, d)
		}
	}
}
