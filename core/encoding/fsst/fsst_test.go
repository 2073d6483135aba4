package fsst

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// buildTable lays out a table by hand, independently of AppendBytes.
func buildTable(compressed bool, syms ...string) []byte {
	b := make([]byte, TableSize)
	h := uint64(0x46535354)<<32 | uint64(len(syms))
	if compressed {
		h |= 1 << 24
	}
	binary.LittleEndian.PutUint64(b, h)
	for i, s := range syms {
		copy(b[8+8*i:], s)
		b[8+8*len(syms)+i] = byte(len(s))
	}
	return b
}

func mustParse(t testing.TB, b []byte) *Table {
	t.Helper()
	tab, err := ParseTable(b)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestHandTable(t *testing.T) {
	tab := mustParse(t, buildTable(true, "abc", "de", "hello wo", "x"))
	if tab.NumSymbols() != 4 || !tab.Compressed() {
		t.Fatalf("NumSymbols %d, Compressed %v", tab.NumSymbols(), tab.Compressed())
	}
	tests := []struct {
		name  string
		codes []byte
		want  string
	}{
		{"empty", nil, ""},
		{"symbols and escape", []byte{0, 255, 'x', 1}, "abcxde"},
		{"long symbols", []byte{2, 2, 3}, "hello wohello wox"},
		{"escaped escape byte", []byte{255, 255, 255, 0}, "\xff\x00"},
		{"only escapes", []byte{255, 'h', 255, 'i'}, "hi"},
		{"five codes", []byte{1, 1, 1, 1, 0}, "dedededeabc"},
		{"escape inside fast window", []byte{0, 0, 255, 'z', 1, 1, 1, 1, 1}, "abcabczdededede" + "de"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tab.Decode([]byte("prefix:"), tc.codes)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix:"+tc.want {
				t.Fatalf("Decode = %q, want %q", got, "prefix:"+tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tab := mustParse(t, buildTable(true, "abc", "de"))
	tests := []struct {
		name   string
		codes  []byte
		offset int64
		prefix string
	}{
		{"undefined code", []byte{0, 2}, 1, "abc"},
		{"undefined code in fast window", []byte{1, 1, 7, 1, 1}, 2, "dede"},
		{"trailing escape", []byte{1, 255}, 1, "de"},
		{"lone escape", []byte{255}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tab.Decode(nil, tc.codes)
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *CorruptError", err)
			}
			if ce.Offset != tc.offset {
				t.Errorf("offset %d, want %d (%v)", ce.Offset, tc.offset, err)
			}
			if string(got) != tc.prefix {
				t.Errorf("partial output %q, want %q", got, tc.prefix)
			}
		})
	}
}

func TestUncompressedTable(t *testing.T) {
	tab := mustParse(t, buildTable(false))
	if tab.Compressed() {
		t.Fatal("switch bit clear but Compressed is true")
	}
	got, err := tab.Decode(nil, []byte{255, 1, 2})
	if err != nil || !bytes.Equal(got, []byte{255, 1, 2}) {
		t.Fatalf("Decode = %v, %v", got, err)
	}
	if enc := tab.Encode(nil, []byte("raw")); string(enc) != "raw" {
		t.Fatalf("Encode = %q", enc)
	}
	data, offs, err := tab.DecodeOffsets([]byte("z"), []int64{9}, []byte("..abcdef"), []int64{2, 4, 4, 8})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "zabcdef" || fmt.Sprint(offs) != "[9 1 3 3 7]" {
		t.Fatalf("DecodeOffsets = %q %v", data, offs)
	}
}

func TestParseTableErrors(t *testing.T) {
	good := buildTable(true, "ab", "c")
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:TableSize-1]},
		{"long", append(append([]byte(nil), good...), 0)},
		{"bad magic", mutate(func(b []byte) []byte { b[7] = 'X'; return b })},
		{"255 symbols of length 0", mutate(func(b []byte) []byte { b[0] = 255; return b })},
		{"zero length", mutate(func(b []byte) []byte { b[8+16+1] = 0; return b })},
		{"length 9", mutate(func(b []byte) []byte { b[8+16] = 9; return b })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseTable(tc.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// Test255Symbols checks the largest table: 255 symbols, code 254 the last.
func Test255Symbols(t *testing.T) {
	syms := make([]string, 255)
	for i := range syms {
		syms[i] = fmt.Sprintf("%c%c", 'A'+i/26, 'a'+i%26)
	}
	// Lengths would all be 2; 255 symbols fill 8+255*9 = 2303 bytes.
	b := buildTable(true, syms...)
	tab, err := ParseTable(b)
	if err != nil {
		// 255 is allowed; the error case above uses the same count with
		// zero lengths.
		t.Fatal(err)
	}
	got, err := tab.Decode(nil, []byte{254, 0})
	if err != nil || string(got) != syms[254]+syms[0] {
		t.Fatalf("Decode = %q, %v", got, err)
	}
	if !bytes.Equal(tab.AppendBytes(nil), b) {
		t.Fatal("AppendBytes differs from the hand layout")
	}
}

func TestAppendBytesLayout(t *testing.T) {
	b := buildTable(true, "abc", "de")
	// Header hints survive a parse and a re-serialisation.
	b[1], b[2] = 7, 9 // terminator, suffix_lim
	tab := mustParse(t, b)
	out := tab.AppendBytes([]byte{1, 2})
	if !bytes.Equal(out[:2], []byte{1, 2}) || !bytes.Equal(out[2:], b) {
		t.Fatalf("AppendBytes does not reproduce the table")
	}
	// The exact header for a table of 2 symbols, switch on, terminator 7,
	// suffix_lim 9: "FSST" 01 09 07 02, little-endian.
	want := []byte{0x02, 0x07, 0x09, 0x01, 0x54, 0x53, 0x53, 0x46}
	if !bytes.Equal(out[2:10], want) {
		t.Fatalf("header % x, want % x", out[2:10], want)
	}
	if s := tab.Symbol(1); string(s) != "de" {
		t.Fatalf("Symbol(1) = %q", s)
	}
	if s := tab.Symbol(2); s != nil {
		t.Fatalf("Symbol(2) = %q, want nil", s)
	}
}

func TestDecodeOffsets(t *testing.T) {
	tab := mustParse(t, buildTable(true, "abc", "de"))
	src := []byte{9, 9, 0, 1, 255, 'q', 0, 1}
	data, offs, err := tab.DecodeOffsets([]byte("X"), nil, src, []int64{2, 4, 4, 6, 8})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "Xabcdeqabcde" || fmt.Sprint(offs) != "[1 6 6 7 12]" {
		t.Fatalf("got %q %v", data, offs)
	}

	bad := []struct {
		name string
		offs []int64
	}{
		{"none", nil},
		{"negative", []int64{-1, 2}},
		{"past end", []int64{0, 9}},
		{"decreasing", []int64{0, 4, 2, 8}},
		{"first above last", []int64{6, 2}},
		{"bad code inside", []int64{0, 1}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tab.DecodeOffsets(nil, nil, src, tc.offs)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// corpus returns n strings that look like log lines and URLs.
func corpus(rng *rand.Rand, n int) [][]byte {
	hosts := []string{"example.com", "lancedb.com", "kv0.dev", "storage.internal"}
	paths := []string{"/api/v1/items/", "/static/img/", "/users/", "/search?q="}
	levels := []string{"INFO", "WARN", "ERROR", "DEBUG"}
	out := make([][]byte, n)
	for i := range out {
		switch rng.IntN(3) {
		case 0:
			out[i] = fmt.Appendf(nil, "https://%s%s%d", hosts[rng.IntN(len(hosts))], paths[rng.IntN(len(paths))], rng.IntN(100000))
		case 1:
			out[i] = fmt.Appendf(nil, "2025-11-%02d %s request served in %dms", 1+rng.IntN(28), levels[rng.IntN(4)], rng.IntN(500))
		default:
			b := make([]byte, rng.IntN(20))
			for k := range b {
				b[k] = byte(rng.Uint32())
			}
			out[i] = b
		}
	}
	return out
}

func TestTrainRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 10, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			strs := corpus(rng, n)
			tab := Train(strs)
			// Through the serialised form, as a reader would see it.
			tab = mustParse(t, tab.AppendBytes(nil))
			var comp []byte
			offs := []int64{0}
			raw := 0
			for _, s := range strs {
				comp = tab.Encode(comp, s)
				offs = append(offs, int64(len(comp)))
				raw += len(s)
			}
			data, outOffs, err := tab.DecodeOffsets(nil, nil, comp, offs)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range strs {
				if got := data[outOffs[i]:outOffs[i+1]]; !bytes.Equal(got, s) {
					t.Fatalf("string %d = %q, want %q", i, got, s)
				}
			}
			if n == 5000 {
				ratio := float64(len(comp)) / float64(raw)
				t.Logf("%d symbols, %d → %d bytes (%.2f)", tab.NumSymbols(), raw, len(comp), ratio)
				if ratio > 0.75 {
					t.Errorf("compression ratio %.2f, want < 0.75 on repetitive text", ratio)
				}
			}
		})
	}
}

func TestTrainDeterministic(t *testing.T) {
	strs := corpus(rand.New(rand.NewPCG(3, 4)), 3000)
	a := Train(strs).AppendBytes(nil)
	b := Train(strs).AppendBytes(nil)
	if !bytes.Equal(a, b) {
		t.Fatal("Train is not deterministic")
	}
}

func TestEncodeLongestMatch(t *testing.T) {
	tab := mustParse(t, buildTable(true, "a", "ab", "abcd", "b"))
	got := tab.Encode(nil, []byte("abcdababxa"))
	want := []byte{2, 1, 1, 255, 'x', 0}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode = %v, want %v", got, want)
	}
	if s := strings.Repeat("ab", 3); string(must(tab.Decode(nil, tab.Encode(nil, []byte(s))))) != s {
		t.Fatal("round trip failed")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeAllocs(t *testing.T) {
	tab := mustParse(t, buildTable(true, "abc", "de"))
	src := bytes.Repeat([]byte{0, 1, 255, 'z'}, 100)
	dst := make([]byte, 0, 8*len(src))
	n := testing.AllocsPerRun(20, func() {
		var err error
		if _, err = tab.Decode(dst[:0], src); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Decode allocates %v times with room in dst", n)
	}
}
