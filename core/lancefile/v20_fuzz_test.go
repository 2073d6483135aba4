package lancefile

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
)

// The fuzz targets feed arbitrary encodings and buffers to the 2.0 page
// decoders. They must never panic or allocate far beyond their input, and
// whatever decodes must be a valid Arrow array of the page's row count.

func marshal20(t testing.TB, e *enc20pb.ArrayEncoding) []byte {
	b, err := e.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fuzzPage20 decodes one page of type types[typ%len(types)].
func fuzzPage20(t *testing.T, types []arrow.DataType, enc []byte, b0, b1, b2 []byte, rows uint16, typ uint8) {
	var ae enc20pb.ArrayEncoding
	if ae.UnmarshalVT(enc) != nil {
		return
	}
	dt := types[int(typ)%len(types)]
	c, err := decodeLeafPage20(pageBufs20{b0, b1, b2}, &ae, uint64(rows), dt, true)
	if err != nil {
		checkErr20(t, err)
		return
	}
	if c.len() != int(rows) {
		t.Fatalf("page of %d rows decoded %d", rows, c.len())
	}
	arr, err := c.slice(0, c.len())
	if err != nil {
		checkErr20(t, err)
		return
	}
	defer arr.Release()
	if !arrow.TypeEqual(arr.DataType(), dt) {
		t.Fatalf("decoded %v, want %v", arr.DataType(), dt)
	}
	if v, ok := arr.(interface{ ValidateFull() error }); ok {
		// Strings are not checked for UTF-8 (neither does lance); the
		// rest of the array must be well formed.
		if err := v.ValidateFull(); err != nil && !strings.Contains(err.Error(), "not valid utf8") {
			t.Fatalf("invalid array: %v", err)
		}
	}
	for i := range arr.Len() {
		cell(arr, i)
	}
}

// checkErr20 accepts errors, but not ones that escape the package's error
// vocabulary when wrapped by pageErr.
func checkErr20(t *testing.T, err error) {
	f := &File{key: "fuzz"}
	werr := f.pageErr(0, 0, err)
	if !errors.Is(werr, ErrCorrupt) && !errors.Is(werr, ErrUnsupportedEncoding) && !errors.Is(werr, ErrUnsupportedType) {
		t.Fatalf("error outside the package's sentinels: %v", err)
	}
}

func FuzzV20PagePrimitive(f *testing.F) {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int32, arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Float64,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32),
	}
	f.Add(marshal20(f, someNullsE(flatE(1, 0), flatE(32, 1))), []byte{0b10110}, le32(7, 8, 9, 10, 11), []byte(nil), uint16(5), uint8(0))
	f.Add(marshal20(f, someNullsE(flatE(1, 0), flatE(1, 1))), []byte{0xff, 3}, []byte{0x55, 1}, []byte(nil), uint16(10), uint8(1))
	f.Add(marshal20(f, noNullsE(flatE(64, 0))), le64(1, 2, 3), []byte(nil), []byte(nil), uint16(3), uint8(2))
	f.Add(marshal20(f, allNullsE()), []byte(nil), []byte(nil), []byte(nil), uint16(100), uint8(6))
	f.Add(marshal20(f, someNullsE(flatE(1, 0), ae20(&enc20pb.FixedSizeList{Dimension: 2, Items: noNullsE(flatE(32, 1))}))),
		[]byte{0b101}, le32(1, 2, 3, 4, 5, 6), []byte(nil), uint16(3), uint8(7))
	f.Add(marshal20(f, ae20(&enc20pb.Bitpacked{CompressedBitsPerValue: 4, UncompressedBitsPerValue: 16, Signed: true, Buffer: &enc20pb.Buffer{}})),
		[]byte{0x5d, 0xf0, 0x07}, []byte(nil), []byte(nil), uint16(5), uint8(4))
	f.Add(marshal20(f, ae20(&enc20pb.BitpackedForNonNeg{CompressedBitsPerValue: 1, UncompressedBitsPerValue: 32, Buffer: &enc20pb.Buffer{}})),
		make([]byte, 128), []byte(nil), []byte(nil), uint16(1000), uint8(0))
	f.Add(marshal20(f, ae20(&enc20pb.Constant{Value: le64(42)})), []byte(nil), []byte(nil), []byte(nil), uint16(3), uint8(2))
	f.Fuzz(func(t *testing.T, enc, b0, b1, b2 []byte, rows uint16, typ uint8) {
		fuzzPage20(t, types, enc, b0, b1, b2, rows, typ)
	})
}

func FuzzV20PageBinary(f *testing.F) {
	types := []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString}
	f.Add(marshal20(f, binaryE(0, 6)), le64(2, 8, 2, 5, 11), []byte("abcde"), []byte(nil), uint16(5), uint8(0))
	f.Add(marshal20(f, binaryE(0, 1)), le64(1, 1), []byte(nil), []byte(nil), uint16(2), uint8(1))
	f.Add(marshal20(f, binaryE(1, 3)), []byte(nil), le64(0, 2), []byte("xy"), uint16(2), uint8(2))
	for _, scheme := range []compress.Scheme{compress.SchemeZstd, compress.SchemeLZ4} {
		comp, err := compress.Compress(scheme, 0, nil, []byte("hello, hello, hello"))
		if err != nil {
			f.Fatal(err)
		}
		enc := ae20(&enc20pb.Binary{Indices: noNullsE(flatE(64, 0)), NullAdjustment: 20,
			Bytes: ae20(&enc20pb.Flat{BitsPerValue: 8, Buffer: &enc20pb.Buffer{BufferIndex: 1}, Compression: &enc20pb.Compression{Scheme: scheme.String()}})})
		f.Add(marshal20(f, enc), le64(5, 25, 19), comp, []byte(nil), uint16(3), uint8(0))
	}
	f.Fuzz(func(t *testing.T, enc, b0, b1, b2 []byte, rows uint16, typ uint8) {
		fuzzPage20(t, types, enc, b0, b1, b2, rows, typ)
	})
}

func FuzzV20PageDictionary(f *testing.F) {
	types := []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString}
	dict := func(n uint32) []byte {
		return marshal20(f, ae20(&enc20pb.Dictionary{Indices: noNullsE(flatE(8, 0)), Items: binaryE(1, 8), NumDictionaryItems: n}))
	}
	f.Add(dict(3), []byte{1, 0, 3, 2, 3, 1}, le64(3, 3, 7), []byte("redblue"), uint16(6), uint8(0))
	f.Add(dict(1), []byte{0, 1}, le64(9), []byte(nil), uint16(2), uint8(1))
	f.Fuzz(func(t *testing.T, enc, b0, b1, b2 []byte, rows uint16, typ uint8) {
		fuzzPage20(t, types, enc, b0, b1, b2, rows, typ)
	})
}

func FuzzV20PageList(f *testing.F) {
	f.Add(marshal20(f, listE(3, 2)), le64(2, 5, 2), uint16(3))
	f.Add(marshal20(f, listE(6, 5)), le64(1, 4, 10, 5), uint16(4))
	f.Add(marshal20(f, listE(1, 0)), []byte(nil), uint16(0))
	f.Fuzz(func(t *testing.T, enc, b0 []byte, rows uint16) {
		var ae enc20pb.ArrayEncoding
		if ae.UnmarshalVT(enc) != nil {
			return
		}
		l, ok := ae.GetArrayEncoding().(*enc20pb.ArrayEncoding_List)
		if !ok {
			return
		}
		offs, _, err := decodeListPage20(pageBufs20{b0}, l.List, uint64(rows))
		if err != nil {
			checkErr20(t, err)
			return
		}
		if len(offs) != int(rows)+1 || offs[0] != 0 {
			t.Fatalf("%d offsets for %d rows", len(offs), rows)
		}
		for i := range int(rows) {
			if offs[i+1] < offs[i] || offs[i+1] > l.List.GetNumItems() {
				t.Fatalf("bad offsets %v (num_items %d)", offs, l.List.GetNumItems())
			}
		}
	})
}

// FuzzV20File reads every row of a whole 2.0 file: the hand-built
// multi-page file and lance's kv and codecs files as seeds.
func FuzzV20File(f *testing.F) {
	data, s, _ := multiPageFile20(f)
	f.Add(data)
	for _, name := range []string{"v20_kv.lance", "v20_codecs.lance"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		file, err := Open(ctx, newMemWith(t, data), "f.lance", int64(len(data)))
		if err != nil || file.Version() != V2_0 || file.NumRows() > 1<<16 {
			return
		}
		schema := s
		if fs := file.Schema(); fs != nil {
			schema = fs
		}
		var fields []*Field
		for _, fld := range schema.Fields {
			if fld.Err == nil {
				fields = append(fields, fld)
			}
		}
		r, err := file.NewReader(fields, preorderColumns(schema), ReadOptions{})
		if err != nil {
			return
		}
		for r.Rows() > 0 {
			arrs, err := r.Next(ctx, 7)
			if err != nil {
				return
			}
			for _, a := range arrs {
				for i := range a.Len() {
					cell(a, i)
				}
				a.Release()
			}
		}
	})
}
