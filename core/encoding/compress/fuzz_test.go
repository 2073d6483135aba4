package compress

import (
	"bytes"
	"testing"
)

// FuzzDecompress feeds arbitrary bytes to Decompress. Nothing may panic,
// the output may not exceed what the input can expand to, and anything that
// decodes must survive a Compress and a second Decompress.
func FuzzDecompress(f *testing.F) {
	for _, s := range schemes {
		for _, in := range [][]byte{nil, []byte("hello"), bytes.Repeat([]byte("abcd"), 100)} {
			comp, err := Compress(s, 3, nil, in)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(byte(s), comp)
		}
	}
	f.Add(byte(SchemeZstd), helloFrame)
	f.Add(byte(SchemeLZ4), []byte{17, 0, 0, 0, 0x35, 'a', 'b', 'c', 3, 0, 0x50, 'x', 'y', 'z', 'u', 'v'})
	f.Fuzz(func(t *testing.T, scheme byte, in []byte) {
		s := Scheme(scheme % 4)
		out, err := Decompress(s, nil, in)
		if err != nil {
			return
		}
		if len(out) > MaxSize || len(out) > len(in)*zstdMaxRatio {
			t.Fatalf("%d bytes decoded to %d", len(in), len(out))
		}
		again, err := Compress(s, 1, nil, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(s, nil, again)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("re-compress round trip: %v", err)
		}
	})
}

// FuzzRoundTrip compresses arbitrary bytes with both schemes.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("the quick brown fox jumps over the lazy dog"), 3)
	f.Add(make([]byte, 1000), 1)
	f.Fuzz(func(t *testing.T, in []byte, level int) {
		for _, s := range schemes {
			comp, err := Compress(s, level%23, nil, in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Decompress(s, nil, comp)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%v level %d: %v", s, level%23, err)
			}
		}
	})
}
