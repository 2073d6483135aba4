package fsst

import (
	"bytes"
	"testing"
)

// fuzzTable turns arbitrary bytes into a table: the first byte picks the
// number of symbols, the rest fill symbols and lengths. It returns nil when
// the table does not parse.
func fuzzTable(spec []byte) *Table {
	b := make([]byte, TableSize)
	copy(b[8:], spec)
	n := 0
	if len(spec) > 0 {
		n = int(spec[0])
	}
	h := uint64(0x46535354)<<32 | 1<<24 | uint64(n)
	for k := range 8 {
		b[k] = byte(h >> (8 * k))
	}
	for c := range n {
		l := &b[8+8*n+c]
		*l = *l%8 + 1
	}
	t, err := ParseTable(b)
	if err != nil {
		return nil
	}
	return t
}

// FuzzParseTable parses arbitrary bytes as a symbol table. Nothing may
// panic; a table that parses must serialise to bytes that parse to the same
// table.
func FuzzParseTable(f *testing.F) {
	f.Add(buildTable(true, "abc", "de"))
	f.Add(buildTable(false))
	f.Add(Train([][]byte{[]byte("hello world hello world")}).AppendBytes(nil))
	f.Add([]byte("FSST"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseTable(b)
		if err != nil {
			return
		}
		again, err := ParseTable(tab.AppendBytes(nil))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if again.n != tab.n || again.compressed != tab.compressed || again.lens != tab.lens ||
			again.symbols != tab.symbols || again.terminator != tab.terminator || again.suffixLim != tab.suffixLim {
			t.Fatal("table changed across AppendBytes and ParseTable")
		}
	})
}

// FuzzDecode decodes arbitrary codes with an arbitrary table. Nothing may
// panic, the output may not exceed 8 bytes per code, and whatever decodes
// must survive an Encode and a second Decode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{3, 'a', 0, 0, 0, 0, 0, 0, 0, 'b', 'c', 0, 0, 0, 0, 0, 0, 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'}, []byte{0, 1, 2, 255, 7})
	f.Add([]byte{0}, []byte{255, 255})
	f.Add([]byte{200, 1, 2, 3}, []byte{199, 200, 201, 0})
	f.Fuzz(func(t *testing.T, spec, src []byte) {
		tab := fuzzTable(spec)
		if tab == nil {
			return
		}
		out, err := tab.Decode(nil, src)
		if cap(out) > MaxSymbolLen*len(src)*5/4+64 { // 8 per code, plus size-class rounding
			t.Fatalf("Decode of %d bytes reserved %d bytes", len(src), cap(out))
		}
		if err != nil {
			return
		}
		enc := tab.Encode(nil, out)
		back, err := tab.Decode(nil, enc)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("re-encode round trip: %v, %q != %q", err, back, out)
		}
		// DecodeOffsets on a split of the same input agrees with Decode.
		mid := int64(len(enc) / 2)
		for mid > 0 && mid < int64(len(enc)) && enc[mid-1] == Escape {
			mid-- // do not split an escape from its literal byte
		}
		data, offs, err := tab.DecodeOffsets(nil, nil, enc, []int64{0, mid, int64(len(enc))})
		if err != nil || !bytes.Equal(data, out) || offs[2] != int64(len(out)) {
			t.Fatalf("DecodeOffsets: %v", err)
		}
	})
}

// FuzzRoundTrip trains on strings cut from the input and checks that every
// string encodes and decodes back to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("the quick brown fox|jumps over|the lazy dog|the end"), byte('|'))
	f.Add([]byte{0, 255, 255, 0, 1}, byte(0))
	f.Fuzz(func(t *testing.T, in []byte, sep byte) {
		strs := bytes.Split(in, []byte{sep})
		tab := Train(strs)
		tab2, err := ParseTable(tab.AppendBytes(nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strs {
			enc := tab.Encode(nil, s)
			dec, err := tab2.Decode(nil, enc)
			if err != nil || !bytes.Equal(dec, s) {
				t.Fatalf("%q: %v, got %q", s, err, dec)
			}
		}
	})
}
