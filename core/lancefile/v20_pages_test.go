package lancefile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
)

// decodeCells20 decodes a hand-built leaf page and returns its rows as cells.
func decodeCells20(enc *enc20pb.ArrayEncoding, rows uint64, dt arrow.DataType, bufs ...[]byte) ([]any, error) {
	c, err := decodeLeafPage20(pageBufs20(bufs), enc, rows, dt, true)
	if err != nil {
		return nil, err
	}
	arr, err := c.slice(0, c.len())
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	out := make([]any, arr.Len())
	for i := range out {
		out[i] = cell(arr, i)
	}
	return out, nil
}

func TestV20Pages(t *testing.T) {
	i32 := arrow.PrimitiveTypes.Int32
	str := arrow.BinaryTypes.String
	// 2 bits of 1024 values 0,1,2,3,0,1,… packed as FastLanes blocks.
	var packedNonNeg []byte
	{
		vals := make([]uint32, 1024)
		for i := range vals {
			vals[i] = uint32(i % 4)
		}
		dst := make([]byte, bitpack.PackedBytes(2))
		if err := bitpack.PackBlock(32, 2, dst, le32(vals...)); err != nil {
			t.Fatal(err)
		}
		packedNonNeg = append(dst, dst...)
	}
	zstdVals, err := compress.Compress(compress.SchemeZstd, 0, nil, le32(3, 1, 4, 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	lz4Bytes, err := compress.Compress(compress.SchemeLZ4, 0, nil, []byte("hello, hello, hello"))
	if err != nil {
		t.Fatal(err)
	}
	nonNegWant := make([]any, 1500)
	for i := range nonNegWant {
		nonNegWant[i] = uint64(i % 1024 % 4)
	}

	for _, tc := range []struct {
		name string
		enc  *enc20pb.ArrayEncoding
		rows uint64
		dt   arrow.DataType
		bufs [][]byte
		want []any
	}{
		{
			name: "nullable some_nulls int32",
			enc:  someNullsE(flatE(1, 0), flatE(32, 1)),
			rows: 5, dt: i32,
			bufs: [][]byte{{0b10110}, le32(7, 0xffffffff, 9, 0, 11)},
			want: []any{nil, int64(-1), int64(9), nil, int64(11)},
		},
		{
			name: "nullable no_nulls uint16",
			enc:  noNullsE(flatE(16, 0)),
			rows: 3, dt: arrow.PrimitiveTypes.Uint16,
			bufs: [][]byte{le16(1, 65535, 300)},
			want: []any{uint64(1), uint64(65535), uint64(300)},
		},
		{
			name: "nullable all_nulls timestamp",
			enc:  allNullsE(),
			rows: 2, dt: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
			want: []any{nil, nil},
		},
		{
			name: "bool some_nulls",
			enc:  someNullsE(flatE(1, 0), flatE(1, 1)),
			rows: 10, dt: arrow.FixedWidthTypes.Boolean,
			bufs: [][]byte{bitsLSB(true, true, false, true, true, true, true, true, true, false), bitsLSB(true, false, true, false, false, false, false, false, true, true)},
			want: []any{true, false, nil, false, false, false, false, false, true, nil},
		},
		{
			// "ab", null, "", "cde", null: a null stores its end plus the
			// adjustment (total bytes + 1 = 6).
			name: "binary with null adjustment",
			enc:  binaryE(0, 6),
			rows: 5, dt: str,
			bufs: [][]byte{le64(2, 2+6, 2, 5, 5+6), []byte("abcde")},
			want: []any{"ab", nil, "", "cde", nil},
		},
		{
			name: "large binary",
			enc:  binaryE(0, 4),
			rows: 2, dt: arrow.BinaryTypes.LargeBinary,
			bufs: [][]byte{le64(3, 3+4), {1, 2, 3}},
			want: []any{"\x01\x02\x03", nil},
		},
		{
			// u8 indices, 0 = null, i → items[i-1]; items "red", "", "blue".
			name: "dictionary with nulls",
			enc: ae20(&enc20pb.Dictionary{
				Indices:            noNullsE(flatE(8, 0)),
				Items:              binaryE(1, 8),
				NumDictionaryItems: 3,
			}),
			rows: 6, dt: str,
			bufs: [][]byte{{1, 0, 3, 2, 3, 1}, le64(3, 3, 7), []byte("redblue")},
			want: []any{"red", nil, "blue", "", "blue", "red"},
		},
		{
			// The dictionary of an all-null page: one null item.
			name: "dictionary of nulls",
			enc: ae20(&enc20pb.Dictionary{
				Indices:            noNullsE(flatE(8, 0)),
				Items:              binaryE(1, 1),
				NumDictionaryItems: 1,
			}),
			rows: 2, dt: str,
			bufs: [][]byte{{0, 1}, le64(1), nil},
			want: []any{nil, nil},
		},
		{
			name: "fixed_size_list float32 with null rows",
			enc: someNullsE(flatE(1, 0), ae20(&enc20pb.FixedSizeList{
				Dimension: 2, Items: noNullsE(flatE(32, 1)),
			})),
			rows: 3, dt: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32),
			bufs: [][]byte{{0b101}, le32(0x3f800000, 0x40000000, 0, 0, 0xbf800000, 0x40400000)},
			want: []any{[]any{1.0, 2.0}, nil, []any{-1.0, 3.0}},
		},
		{
			// -3, 5, 0, -1, 7 in 4 signed bits each, LSB first.
			name: "bitpacked signed",
			enc: ae20(&enc20pb.Bitpacked{CompressedBitsPerValue: 4, UncompressedBitsPerValue: 16, Signed: true,
				Buffer: &enc20pb.Buffer{}}),
			rows: 5, dt: arrow.PrimitiveTypes.Int16,
			bufs: [][]byte{{0x5d, 0xf0, 0x07}},
			want: []any{int64(-3), int64(5), int64(0), int64(-1), int64(7)},
		},
		{
			name: "bitpacked unsigned 11 bits",
			enc: ae20(&enc20pb.Bitpacked{CompressedBitsPerValue: 11, UncompressedBitsPerValue: 32,
				Buffer: &enc20pb.Buffer{}}),
			rows: 2, dt: arrow.PrimitiveTypes.Uint32,
			bufs: [][]byte{{0xff, 0x07 | 0x01<<3, 0x00}},
			want: []any{uint64(2047), uint64(1)},
		},
		{
			name: "bitpacked_for_non_neg",
			enc: ae20(&enc20pb.BitpackedForNonNeg{CompressedBitsPerValue: 2, UncompressedBitsPerValue: 32,
				Buffer: &enc20pb.Buffer{}}),
			rows: 1500, dt: arrow.PrimitiveTypes.Uint32,
			bufs: [][]byte{packedNonNeg},
			want: nonNegWant,
		},
		{
			name: "constant",
			enc:  ae20(&enc20pb.Constant{Value: le64(42)}),
			rows: 3, dt: arrow.PrimitiveTypes.Int64,
			want: []any{int64(42), int64(42), int64(42)},
		},
		{
			name: "zstd flat int32",
			enc:  noNullsE(ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{}, Compression: &enc20pb.Compression{Scheme: "zstd"}})),
			rows: 5, dt: i32,
			bufs: [][]byte{zstdVals},
			want: []any{int64(3), int64(1), int64(4), int64(1), int64(5)},
		},
		{
			name: "lz4 binary bytes",
			enc: ae20(&enc20pb.Binary{Indices: noNullsE(flatE(64, 0)), NullAdjustment: 20,
				Bytes: ae20(&enc20pb.Flat{BitsPerValue: 8, Buffer: &enc20pb.Buffer{BufferIndex: 1}, Compression: &enc20pb.Compression{Scheme: "lz4"}})}),
			rows: 3, dt: str,
			bufs: [][]byte{le64(5, 5+20, 19), lz4Bytes},
			want: []any{"hello", nil, ", hello, hello"},
		},
		{
			name: "empty page",
			enc:  binaryE(0, 0),
			rows: 0, dt: str,
			bufs: [][]byte{nil, nil},
			want: []any{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeCells20(tc.enc, tc.rows, tc.dt, tc.bufs...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestV20PageErrors(t *testing.T) {
	i32 := arrow.PrimitiveTypes.Int32
	str := arrow.BinaryTypes.String
	for _, tc := range []struct {
		name string
		enc  *enc20pb.ArrayEncoding
		rows uint64
		dt   arrow.DataType
		bufs [][]byte
		want error
	}{
		{"flat buffer too short", noNullsE(flatE(32, 0)), 3, i32, [][]byte{le32(1, 2)}, nil},
		{"flat width mismatch", noNullsE(flatE(64, 0)), 1, i32, [][]byte{le64(1)}, nil},
		{"missing page buffer", noNullsE(flatE(32, 3)), 1, i32, [][]byte{le32(1)}, nil},
		{"column buffer", ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{BufferType: enc20pb.Buffer_column}}), 1, i32, nil, ErrUnsupportedEncoding},
		{"validity too short", someNullsE(flatE(1, 0), flatE(32, 1)), 9, i32, [][]byte{{0xff}, le32(1, 2, 3, 4, 5, 6, 7, 8, 9)}, nil},
		{"binary offsets go down", binaryE(0, 10), 2, str, [][]byte{le64(3, 2), []byte("abc")}, nil},
		{"binary offset past bytes", binaryE(0, 100), 1, str, [][]byte{le64(5), []byte("abc")}, nil},
		{"binary null adjustment 0", binaryE(0, 0), 1, str, [][]byte{le64(0), nil}, nil},
		{"binary huge offset", binaryE(0, 1<<63), 1, str, [][]byte{le64(1 << 62), nil}, nil},
		{"binary for int", binaryE(0, 1), 1, i32, [][]byte{le64(0), nil}, ErrUnsupportedEncoding},
		{"dictionary index past items", ae20(&enc20pb.Dictionary{Indices: noNullsE(flatE(8, 0)), Items: binaryE(1, 2), NumDictionaryItems: 1}),
			1, str, [][]byte{{2}, le64(1), []byte("a")}, nil},
		{"dictionary items short", ae20(&enc20pb.Dictionary{Indices: noNullsE(flatE(8, 0)), Items: binaryE(1, 2), NumDictionaryItems: 1 << 30}),
			1, str, [][]byte{{1}, le64(1), []byte("a")}, nil},
		{"fsl dimension mismatch", noNullsE(ae20(&enc20pb.FixedSizeList{Dimension: 3, Items: noNullsE(flatE(32, 0))})),
			1, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), [][]byte{le32(1, 2)}, nil},
		{"bitpacked width past type", ae20(&enc20pb.Bitpacked{CompressedBitsPerValue: 40, UncompressedBitsPerValue: 32, Buffer: &enc20pb.Buffer{}}),
			1, arrow.PrimitiveTypes.Uint32, [][]byte{make([]byte, 8)}, ErrUnsupportedEncoding},
		{"bitpacked_for_non_neg short", ae20(&enc20pb.BitpackedForNonNeg{CompressedBitsPerValue: 3, UncompressedBitsPerValue: 32, Buffer: &enc20pb.Buffer{}}),
			10, arrow.PrimitiveTypes.Uint32, [][]byte{make([]byte, 100)}, nil},
		{"constant width mismatch", ae20(&enc20pb.Constant{Value: []byte{1, 2}}), 1, i32, nil, ErrUnsupportedEncoding},
		{"all nulls too many rows", allNullsE(), 1 << 40, i32, nil, nil},
		{"struct encoding in a leaf", ae20(&enc20pb.SimpleStruct{}), 1, i32, nil, ErrUnsupportedEncoding},
		{"list bytes (early 2.0)", listE(1, 0), 1, str, nil, ErrUnsupportedEncoding},
		{"compressed flat", ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{}, Compression: &enc20pb.Compression{Scheme: "brotli"}}),
			1, i32, [][]byte{le32(1)}, ErrUnsupportedEncoding},
		{"empty encoding", &enc20pb.ArrayEncoding{}, 1, i32, nil, nil},
		{"zstd claims more than the page uses", noNullsE(ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{}, Compression: &enc20pb.Compression{Scheme: "zstd"}})),
			1, i32, [][]byte{append(le64(1<<29), 0x28, 0xb5, 0x2f, 0xfd)}, nil},
		{"lz4 garbage", noNullsE(ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{}, Compression: &enc20pb.Compression{Scheme: "lz4"}})),
			1, i32, [][]byte{{4, 0, 0, 0, 0xff, 0xff}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeLeafPage20(pageBufs20(tc.bufs), tc.enc, tc.rows, tc.dt, true)
			if err == nil {
				// Unbacked pages fail only when materialized.
				_, err = c.slice(0, c.len())
			}
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want == nil && errors.Is(err, ErrUnsupportedEncoding) {
				t.Fatalf("corrupt input reported as unsupported: %v", err)
			}
		})
	}
}

// multiPageFile20 is a hand-built 2.0 file of 9 rows with fields
// l list<int32> (ids 0, 1), x int64 (id 2), s string (id 3):
//
//	row  l           x     s
//	0    [1 2]       10    "a"
//	1    null        11    null
//	2    []          12    ""
//	3    [3]         13    "bb"
//	4    [4 5 null]  14    null
//	5    null        null  "ccc"
//	6    [7]         16    "d"
//	7    []          null  ""
//	8    [8 9]       18    "eeee"
//
// The list column has pages of 3, 0, 4 and 2 rows; its item column (9
// items) has pages of 3, 1 and 5 rows, so list pages and item pages
// straddle each other.
func multiPageFile20(t testing.TB) ([]byte, *Schema, [][]any) {
	s := schema20(t, [4]any{0, -1, "l", "list"}, [4]any{1, 0, "item", "int32"},
		[4]any{2, -1, "x", "int64"}, [4]any{3, -1, "s", "string"})
	cols := [][]testPage20{
		{ // l: end offsets relative to the page, null = end + adjustment
			{3, listE(3, 2), [][]byte{le64(2, 2+3, 2)}},
			{0, listE(1, 0), [][]byte{nil}},
			{4, listE(6, 5), [][]byte{le64(1, 4, 4+6, 5)}},
			{2, listE(3, 2), [][]byte{le64(0, 2)}},
		},
		{ // item
			{3, noNullsE(flatE(32, 0)), [][]byte{le32(1, 2, 3)}},
			{1, noNullsE(flatE(32, 0)), [][]byte{le32(4)}},
			{5, someNullsE(flatE(1, 0), flatE(32, 1)), [][]byte{{0b11101}, le32(5, 0, 7, 8, 9)}},
		},
		{ // x
			{4, noNullsE(flatE(64, 0)), [][]byte{le64(10, 11, 12, 13)}},
			{5, someNullsE(flatE(1, 0), flatE(64, 1)), [][]byte{{0b10101}, le64(14, 0, 16, 0, 18)}},
		},
		{ // s
			{2, binaryE(0, 2), [][]byte{le64(1, 1+2), []byte("a")}},
			{7, binaryE(0, 11), [][]byte{le64(0, 2, 2+11, 5, 6, 6, 10), []byte("bbcccdeeee")}},
		},
	}
	l := func(vs ...any) []any {
		out := []any{}
		for _, v := range vs {
			if v != nil {
				v = int64(v.(int))
			}
			out = append(out, v)
		}
		return out
	}
	want := [][]any{
		{l(1, 2), nil, l(), l(3), l(4, 5, nil), nil, l(7), l(), l(8, 9)},
		{int64(10), int64(11), int64(12), int64(13), int64(14), nil, int64(16), nil, int64(18)},
		{"a", nil, "", "bb", nil, "ccc", "d", "", "eeee"},
	}
	return buildFile20(t, cols), s, want
}

func TestV20MultiPage(t *testing.T) {
	data, s, want := multiPageFile20(t)
	f := openBytes20(t, data)
	if f.NumRows() != 9 {
		t.Fatalf("%d rows", f.NumRows())
	}
	columnOf := preorderColumns(s)
	for _, sizes := range [][]int{{9}, {1}, {2}, {4, 5}, {-3, 6}, {-1, 2, -2, 1, -1, 3}, {-4, 1, -3, 1}, {-8, 1}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			rows, cells := readAll20(t, f, s.Fields, columnOf, sizes)
			for fi := range s.Fields {
				for k, i := range rows {
					if !reflect.DeepEqual(cells[fi][k], want[fi][i]) {
						t.Fatalf("%s row %d: got %v, want %v", s.Fields[fi].Name, i, cells[fi][k], want[fi][i])
					}
				}
			}
		})
	}
}

// TestV20SkipWithoutIO checks that whole skipped pages are never read: after
// skipping the first list page (3 rows) and the first x page (4 rows), their
// buffers stay untouched.
func TestV20SkipWithoutIO(t *testing.T) {
	data, s, _ := multiPageFile20(t)
	ctx := context.Background()
	f0 := openBytes20(t, data)
	firstList := f0.columns[0].pages[0].bufs[0]
	firstX := f0.columns[2].pages[0].bufs[0]

	for _, tc := range []struct {
		field string
		skip  int
		buf   bufRange
	}{{"l", 3, firstList}, {"x", 4, firstX}} {
		st := &readLog{Memory: newMemWith(t, data)}
		f, err := Open(ctx, st, "f.lance", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		st.reads = nil
		r, err := f.NewReader([]*Field{s.Field(tc.field)}, preorderColumns(s), ReadOptions{Readahead: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Skip(ctx, tc.skip); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(ctx, 9-tc.skip); err != nil {
			t.Fatal(err)
		}
		if st.touched(int64(tc.buf.off), int64(tc.buf.off+tc.buf.size)) {
			t.Errorf("%s: skipped page was read (reads %v)", tc.field, st.reads)
		}
	}
}

func TestV20ShortColumn(t *testing.T) {
	// The item column holds fewer items than the list pages reference.
	s := schema20(t, [4]any{0, -1, "l", "list"}, [4]any{1, 0, "item", "int32"})
	data := buildFile20(t, [][]testPage20{
		{{2, listE(4, 3), [][]byte{le64(1, 3)}}},
		{{2, noNullsE(flatE(32, 0)), [][]byte{le32(1, 2)}}},
	})
	f := openBytes20(t, data)
	r, err := f.NewReader(s.Fields, preorderColumns(s), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(context.Background(), 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

func TestV20ColumnBuffers(t *testing.T) {
	// A page whose values live in a column-level buffer.
	s := schema20(t, [4]any{0, -1, "x", "int32"})
	enc := noNullsE(ae20(&enc20pb.Flat{BitsPerValue: 32, Buffer: &enc20pb.Buffer{BufferIndex: 0, BufferType: enc20pb.Buffer_column}}))
	data := buildFile20(t, [][]testPage20{{{3, enc, nil}, {1, enc, nil}}}, le32(5, 6, 7))
	f := openBytes20(t, data)
	_, cells := readAll20(t, f, s.Fields, preorderColumns(s), []int{4})
	if want := []any{int64(5), int64(6), int64(7), int64(5)}; !reflect.DeepEqual(cells[0], want) {
		t.Fatalf("got %v, want %v", cells[0], want)
	}
}

func TestV20LargeList(t *testing.T) {
	// large_list<large_string>: [["a" null] null [] ["bc"]] over two list
	// pages and one item page.
	s := schema20(t, [4]any{0, -1, "l", "large_list"}, [4]any{1, 0, "item", "large_string"})
	data := buildFile20(t, [][]testPage20{
		{
			{2, listE(3, 2), [][]byte{le64(2, 2+3)}},
			{2, listE(2, 1), [][]byte{le64(0, 1)}},
		},
		{{3, binaryE(0, 4), [][]byte{le64(1, 1+4, 3), []byte("abc")}}},
	})
	f := openBytes20(t, data)
	_, cells := readAll20(t, f, s.Fields, preorderColumns(s), []int{1, 3})
	want := []any{[]any{"a", nil}, nil, []any{}, []any{"bc"}}
	if !reflect.DeepEqual(cells[0], want) {
		t.Fatalf("got %v, want %v", cells[0], want)
	}
	r, err := f.NewReader(s.Fields, preorderColumns(s), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arrs, err := r.Next(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if arrs[0].DataType().ID() != arrow.LARGE_LIST {
		t.Fatalf("type %v", arrs[0].DataType())
	}
}

func TestV20PackedStructRefused(t *testing.T) {
	s := schema20(t, [4]any{0, -1, "st", "struct"}, [4]any{1, 0, "a", "int32"})
	packed := &enc20pb.ArrayEncoding{ArrayEncoding: &enc20pb.ArrayEncoding_PackedStruct{PackedStruct: &enc20pb.PackedStruct{
		Inner: []*enc20pb.ArrayEncoding{flatE(32, 0)}, Buffer: &enc20pb.Buffer{}}}}
	data := buildFile20(t, [][]testPage20{{{2, packed, [][]byte{le32(1, 2)}}}})
	f := openBytes20(t, data)
	if _, err := f.NewReader(s.Fields, map[int32]int{0: 0}, ReadOptions{}); !errors.Is(err, ErrUnsupportedEncoding) {
		t.Fatalf("got %v", err)
	}
}
