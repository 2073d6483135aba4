package lancefile

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/encoding/bitpack"
	"github.com/kv0/kv0/core/encoding/compress"
	"github.com/kv0/kv0/core/encoding/fsst"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/store"
)

// Hand-built 2.1 pages, byte by byte, decoded through the whole reader.

type tPage struct {
	layout *enc21pb.PageLayout
	bufs   [][]byte
	rows   uint64
}

// testFile21 lays the pages' buffers out in a memory store and returns a
// File whose columns hold them.
func testFile21(t testing.TB, cols [][]tPage) *File {
	t.Helper()
	return testFileV(t, cols, V2_1)
}

// testFileV is testFile21 for a file of version v.
func testFileV(t testing.TB, cols [][]tPage, v Version) *File {
	t.Helper()
	var blob []byte
	f := &File{st: store.NewMemory(), key: "t.lance", version: v}
	for _, pages := range cols {
		var c column
		var row uint64
		for _, p := range pages {
			pi := pageInfo{rows: p.rows, firstRow: row}
			row += p.rows
			for _, b := range p.bufs {
				for len(blob)%64 != 0 {
					blob = append(blob, 0x48)
				}
				pi.bufs = append(pi.bufs, bufRange{uint64(len(blob)), uint64(len(b))})
				blob = append(blob, b...)
			}
			v, err := p.layout.MarshalVT()
			if err != nil {
				t.Fatal(err)
			}
			enc, err := (&wktpb.Any{TypeUrl: "/lance.encodings21.PageLayout", Value: v}).MarshalVT()
			if err != nil {
				t.Fatal(err)
			}
			pi.enc = enc
			c.pages = append(c.pages, pi)
		}
		f.columns = append(f.columns, c)
		if f.numRows == 0 {
			f.numRows = row
		}
	}
	blob = append(blob, make([]byte, 64)...)
	f.size = int64(len(blob))
	if err := f.st.Put(context.Background(), f.key, blob); err != nil {
		t.Fatal(err)
	}
	return f
}

// tSchema builds a schema from (name, logical type, parent index) triples.
func tSchema(t testing.TB, fields ...[3]string) *Schema {
	t.Helper()
	var pf []*filepb.Field
	for i, f := range fields {
		parent := int32(-1)
		if f[2] != "" {
			parent = int32(f[2][0] - '0')
		}
		pf = append(pf, &filepb.Field{Name: f[0], LogicalType: f[1], Id: int32(i), ParentId: parent, Nullable: true})
	}
	s, err := SchemaFromProto(pf, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAllJSON reads every row of the schema's first field, in batches of
// batch rows, and renders them as JSON.
func readAllJSON(t testing.TB, f *File, s *Schema, columnOf map[int32]int, batch int) (string, error) {
	t.Helper()
	r, err := f.NewReader(s.Fields[:1], columnOf, ReadOptions{})
	if err != nil {
		return "", err
	}
	var out []any
	for {
		cols, err := r.Next(context.Background(), batch)
		if err != nil {
			if strings.Contains(err.Error(), "EOF") {
				break
			}
			return "", err
		}
		for i := 0; i < cols[0].Len(); i++ {
			out = append(out, canonValue(cols[0], i))
		}
	}
	b, _ := json.Marshal(out)
	return string(b), nil
}

func flatEnc(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Flat{Flat: &enc21pb.Flat{BitsPerValue: bits}}}
}

func varEnc(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEnc(bits)}}}
}

func miniLayout(mb *enc21pb.MiniBlockLayout) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_MiniBlockLayout{MiniBlockLayout: mb}}
}

func u16le(vs ...int) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	return b
}

func u32le(vs ...int) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func u64le(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// chunk assembles one mini-block chunk: header (num_levels, rep size, def
// size, buffer sizes), then each section padded to 8 with 0xFE.
func chunk(numLevels int, rep, def []byte, bufs ...[]byte) []byte {
	c := u16le(numLevels)
	if rep != nil {
		c = append(c, u16le(len(rep))...)
	}
	if def != nil {
		c = append(c, u16le(len(def))...)
	}
	for _, b := range bufs {
		c = append(c, u16le(len(b))...)
	}
	pad := func() {
		for len(c)%8 != 0 {
			c = append(c, 0xFE)
		}
	}
	pad()
	for _, s := range append([][]byte{rep, def}, bufs...) {
		if s == nil {
			continue
		}
		c = append(c, s...)
		pad()
	}
	return c
}

// chunks returns the metadata and data buffers of a page made of the given
// chunks, with log2 item counts (the last is written as 0).
func chunks(logs []int, cs ...[]byte) ([]byte, []byte) {
	var meta, data []byte
	for i, c := range cs {
		l := logs[i]
		if i == len(cs)-1 {
			l = 0
		}
		meta = append(meta, u16le((len(c)/8-1)<<4|l)...)
		data = append(data, c...)
	}
	return meta, data
}

func check(t *testing.T, got string, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

var (
	lNullItem  = enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM
	lValidItem = enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM
	lNullEmpty = enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST
)

func TestV21FlatChunks(t *testing.T) {
	// 7 u64 values in a chunk of 4 and a last chunk of 3.
	meta, data := chunks([]int{2, 0},
		chunk(0, nil, nil, u64le(0, 1, 2, 3)),
		chunk(0, nil, nil, u64le(4, 5, 6)))
	f := testFile21(t, [][]tPage{{{rows: 7, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: flatEnc(64), Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 7})}}})
	s := tSchema(t, [3]string{"x", "uint64", ""})
	for _, batch := range []int{1, 3, 100} {
		got, err := readAllJSON(t, f, s, map[int32]int{0: 0}, batch)
		check(t, got, err, `["0","1","2","3","4","5","6"]`)
	}
}

func TestV21NullableDefLevels(t *testing.T) {
	meta, data := chunks([]int{0}, chunk(3, nil, u16le(0, 1, 0), u32le(5, 0, 7)))
	f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		DefCompression: flatEnc(16), ValueCompression: flatEnc(32), Layers: []enc21pb.RepDefLayer{lNullItem}, NumBuffers: 1, NumItems: 3})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "int32", ""}), map[int32]int{0: 0}, 10)
	check(t, got, err, `["5",null,"7"]`)
}

func TestV21BoolBitmap(t *testing.T) {
	// 10 booleans 1,0,1,1,0,0,0,0 | 1,1 -> bytes 0x0D, 0x03.
	meta, data := chunks([]int{0}, chunk(0, nil, nil, []byte{0x0D, 0x03}))
	f := testFile21(t, [][]tPage{{{rows: 10, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: flatEnc(1), Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 10})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"b", "bool", ""}), map[int32]int{0: 0}, 3)
	check(t, got, err, `[true,false,true,true,false,false,false,false,true,true]`)
}

func TestV21VariableChunk(t *testing.T) {
	// Offsets are relative to the buffer start: 4 u32 offsets = 16 bytes.
	buf := append(u32le(16, 17, 19, 19), "abc"...)
	buf2 := append(u64le(16, 18), "de"...)
	for _, tc := range []struct {
		name string
		bits uint64
		bufs [][]byte
		logs []int
		n    uint64
		want string
	}{
		{"u32", 32, [][]byte{buf}, []int{0}, 3, `["a","bc",""]`},
		{"u32+u64", 64, [][]byte{buf2}, []int{0}, 1, `["de"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs [][]byte
			for _, b := range tc.bufs {
				cs = append(cs, chunk(0, nil, nil, b))
			}
			meta, data := chunks(tc.logs, cs...)
			f := testFile21(t, [][]tPage{{{rows: tc.n, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
				ValueCompression: varEnc(tc.bits), Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: tc.n})}}})
			got, err := readAllJSON(t, f, tSchema(t, [3]string{"s", "string", ""}), map[int32]int{0: 0}, 2)
			check(t, got, err, tc.want)
		})
	}
}

func TestV21InlineBitpacking(t *testing.T) {
	// Two chunks: 1024 values packed at width 12, then 5 at width 3 (block
	// zero-padded to 1024).
	src := make([]byte, 8*1024)
	for i := 0; i < 1024; i++ {
		binary.LittleEndian.PutUint64(src[8*i:], uint64(i*3))
	}
	p1 := make([]byte, bitpack.PackedBytes(12))
	if err := bitpack.PackBlock(64, 12, p1, src); err != nil {
		t.Fatal(err)
	}
	src2 := make([]byte, 8*1024)
	for i := 0; i < 5; i++ {
		binary.LittleEndian.PutUint64(src2[8*i:], uint64(7-i))
	}
	p2 := make([]byte, bitpack.PackedBytes(3))
	if err := bitpack.PackBlock(64, 3, p2, src2); err != nil {
		t.Fatal(err)
	}
	meta, data := chunks([]int{10, 0},
		chunk(0, nil, nil, append(u64le(12), p1...)),
		chunk(0, nil, nil, append(u64le(3), p2...)))
	ib := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: 64}}}
	f := testFile21(t, [][]tPage{{{rows: 1029, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: ib, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 1029})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "int64", ""}), map[int32]int{0: 0}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	_ = json.Unmarshal([]byte(got), &vals)
	if len(vals) != 1029 || vals[1023] != "3069" || vals[1024] != "7" || vals[1028] != "3" {
		t.Fatalf("got %d values, [1023]=%s [1024..]=%v", len(vals), vals[1023], vals[1024:])
	}
}

func TestV21OutOfLineLevels(t *testing.T) {
	// Def levels 0,1,0,0,1 through OutOfLineBitpacking(16 -> 1): the tail of
	// 5 values is stored raw (10 bytes) or as a padded block (128 bytes).
	oob := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 16, Values: flatEnc(1)}}}
	raw := u16le(0, 1, 0, 0, 1)
	blk := make([]byte, 2*1024)
	copy(blk, raw)
	packed := make([]byte, bitpack.PackedBytes(1))
	if err := bitpack.PackBlock(16, 1, packed, blk); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string][]byte{"raw": raw, "packed": packed} {
		t.Run(name, func(t *testing.T) {
			meta, data := chunks([]int{0}, chunk(5, nil, def, u32le(1, 0, 3, 4, 0)))
			f := testFile21(t, [][]tPage{{{rows: 5, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
				DefCompression: oob, ValueCompression: flatEnc(32), Layers: []enc21pb.RepDefLayer{lNullItem}, NumBuffers: 1, NumItems: 5})}}})
			got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "uint32", ""}), map[int32]int{0: 0}, 5)
			check(t, got, err, `["1",null,"3","4",null]`)
		})
	}
}

func TestV21Rle(t *testing.T) {
	rle := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Rle{Rle: &enc21pb.Rle{Values: flatEnc(64), RunLengths: flatEnc(8)}}}
	meta, data := chunks([]int{0}, chunk(0, nil, nil, u64le(42, 7), []byte{3, 2}))
	f := testFile21(t, [][]tPage{{{rows: 5, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: rle, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 2, NumItems: 5})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "int64", ""}), map[int32]int{0: 0}, 2)
	check(t, got, err, `["42","42","42","7","7"]`)
}

func TestV21ConstantAndGeneral(t *testing.T) {
	cst := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Constant{Constant: &enc21pb.Constant{Value: u32le(9)}}}
	meta, data := chunks([]int{0}, chunk(0, nil, nil))
	f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: cst, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 0, NumItems: 3})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "int32", ""}), map[int32]int{0: 0}, 2)
	check(t, got, err, `["9","9","9"]`)

	for _, scheme := range []compress.Scheme{compress.SchemeZstd, compress.SchemeLZ4} {
		z, err := compress.Compress(scheme, 0, nil, u32le(1, 2, 3, 4))
		if err != nil {
			t.Fatal(err)
		}
		gen := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
			Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme(scheme)}, Values: flatEnc(32)}}}
		meta, data := chunks([]int{0}, chunk(0, nil, nil, z))
		f := testFile21(t, [][]tPage{{{rows: 4, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
			ValueCompression: gen, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 4})}}})
		got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "int32", ""}), map[int32]int{0: 0}, 3)
		check(t, got, err, `["1","2","3","4"]`)
	}
}

func TestV21Dictionary(t *testing.T) {
	// Block-form Variable dictionary: u32 32, u32 start (8 + 3*4 = 20),
	// offsets 0,3,8, "redgreen"; indices 1,0,1 (Flat 8).
	dict := append(u32le(32, 20, 0, 3, 8), "redgreen"...)
	meta, data := chunks([]int{0}, chunk(0, nil, nil, []byte{1, 0, 1}))
	f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data, dict}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: flatEnc(8), Dictionary: varEnc(32), NumDictionaryItems: 2,
		Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 3})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"s", "string", ""}), map[int32]int{0: 0}, 2)
	check(t, got, err, `["green","red","green"]`)
}

func TestV21Fsst(t *testing.T) {
	strs := [][]byte{[]byte("hello world"), []byte("hello there"), []byte("world")}
	tab := fsst.Train(strs)
	buf := u32le(0, 0, 0, 0)
	for i, s := range strs {
		buf = tab.Encode(buf, s)
		binary.LittleEndian.PutUint32(buf[4*(i+1):], uint32(len(buf)))
	}
	binary.LittleEndian.PutUint32(buf, 16)
	enc := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Fsst{Fsst: &enc21pb.Fsst{
		SymbolTable: tab.AppendBytes(nil), Values: varEnc(32)}}}
	meta, data := chunks([]int{0}, chunk(0, nil, nil, buf))
	f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: enc, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 3})}}})
	got, err := readAllJSON(t, f, tSchema(t, [3]string{"s", "string", ""}), map[int32]int{0: 0}, 2)
	check(t, got, err, `["hello world","hello there","world"]`)
}

// listUtf8Pages is list<utf8> rows ["a", null], null, [], ["b"], ["c","d"]
// in two chunks: the null and empty lists after item 2 are invisible and
// belong to the second chunk.
func listUtf8Pages() []tPage {
	c1 := chunk(2, u16le(1, 0), u16le(0, 1), append(u32le(12, 13, 13), "a"...))
	c2 := chunk(5, u16le(1, 1, 1, 1, 0), u16le(2, 3, 0, 0, 0), append(u32le(16, 17, 18, 19), "bcd"...))
	meta, data := chunks([]int{1, 0}, c1, c2)
	return []tPage{{rows: 5, bufs: [][]byte{meta, data, make([]byte, 32)}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		RepCompression: flatEnc(16), DefCompression: flatEnc(16), ValueCompression: varEnc(32),
		Layers: []enc21pb.RepDefLayer{lNullItem, lNullEmpty}, NumBuffers: 1, NumItems: 5, RepetitionIndexDepth: 1})}}
}

func TestV21ListUtf8(t *testing.T) {
	f := testFile21(t, [][]tPage{listUtf8Pages()})
	s := tSchema(t, [3]string{"l", "list", ""}, [3]string{"item", "string", "0"})
	for _, batch := range []int{1, 2, 5} {
		got, err := readAllJSON(t, f, s, map[int32]int{1: 0}, batch)
		check(t, got, err, `[["a",null],null,[],["b"],["c","d"]]`)
	}
	s = tSchema(t, [3]string{"l", "large_list", ""}, [3]string{"item", "large_string", "0"})
	got, err := readAllJSON(t, f, s, map[int32]int{1: 0}, 3)
	check(t, got, err, `[["a",null],null,[],["b"],["c","d"]]`)
}

func TestV21ListOfStruct(t *testing.T) {
	// list<struct<a: int32>>: [{1},{null}], [null], null, [].
	// Page def: 1 a null, 2 struct null, 3 list null, 4 list empty.
	c := chunk(5, u16le(1, 0, 1, 1, 1), u16le(0, 1, 2, 3, 4), u32le(1, 0, 0))
	meta, data := chunks([]int{0}, c)
	f := testFile21(t, [][]tPage{{{rows: 4, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		RepCompression: flatEnc(16), DefCompression: flatEnc(16), ValueCompression: flatEnc(32),
		Layers: []enc21pb.RepDefLayer{lNullItem, lNullItem, lNullEmpty}, NumBuffers: 1, NumItems: 3})}}})
	s := tSchema(t, [3]string{"l", "list.struct", ""}, [3]string{"item", "struct", "0"}, [3]string{"a", "int32", "1"})
	got, err := readAllJSON(t, f, s, map[int32]int{2: 0}, 3)
	check(t, got, err, `[[{"a":"1"},{"a":null}],[null],null,[]]`)
}

func TestV21StructAcrossPages(t *testing.T) {
	// struct<a: int32, b: utf8>: {1,"x"}, null, {null,"y"}, {4,null}, {5,"z"}.
	// Column a has pages of 2 and 3 rows, column b one page of 5.
	layers := []enc21pb.RepDefLayer{lNullItem, lNullItem}
	mkA := func(def []int, vals []int) tPage {
		meta, data := chunks([]int{0}, chunk(len(def), nil, u16le(def...), u32le(vals...)))
		return tPage{rows: uint64(len(def)), bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
			DefCompression: flatEnc(16), ValueCompression: flatEnc(32), Layers: layers, NumBuffers: 1, NumItems: uint64(len(def))})}
	}
	bm, bd := chunks([]int{0}, chunk(5, nil, u16le(0, 2, 0, 1, 0), append(u32le(24, 25, 25, 26, 26, 27), "xyz"...)))
	b := tPage{rows: 5, bufs: [][]byte{bm, bd}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		DefCompression: flatEnc(16), ValueCompression: varEnc(32), Layers: layers, NumBuffers: 1, NumItems: 5})}
	f := testFile21(t, [][]tPage{{mkA([]int{0, 2}, []int{1, 0}), mkA([]int{1, 0, 0}, []int{0, 4, 5})}, {b}})
	s := tSchema(t, [3]string{"s", "struct", ""}, [3]string{"a", "int32", "0"}, [3]string{"b", "string", "0"})
	want := `[{"a":"1","b":"x"},null,{"a":null,"b":"y"},{"a":"4","b":null},{"a":"5","b":"z"}]`
	for _, batch := range []int{1, 2, 3, 5} {
		got, err := readAllJSON(t, f, s, map[int32]int{1: 0, 2: 1}, batch)
		check(t, got, err, want)
	}
	// A member the file lacks decodes as nulls; the struct's validity comes
	// from the member it has.
	got, err := readAllJSON(t, f, s, map[int32]int{2: 1}, 2)
	check(t, got, err, `[{"a":null,"b":"x"},null,{"a":null,"b":"y"},{"a":null,"b":null},{"a":null,"b":"z"}]`)
	// A field with no column at all is all null.
	got, err = readAllJSON(t, f, s, map[int32]int{}, 2)
	check(t, got, err, `[null,null,null,null,null]`)
}

func fullZip(fz *enc21pb.FullZipLayout) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_FullZipLayout{FullZipLayout: fz}}
}

func TestV21FullZip(t *testing.T) {
	t.Run("variable", func(t *testing.T) {
		// [cw 0][len 3]abc [cw 1] [cw 0][len 0]
		buf := append([]byte{0}, u32le(3)...)
		buf = append(buf, "abc"...)
		buf = append(buf, 1, 0, 0, 0, 0, 0)
		f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{buf, {0, 5, 6, 11}}, layout: fullZip(&enc21pb.FullZipLayout{
			BitsDef: 1, Details: &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: 32}, NumItems: 3, NumVisibleItems: 3,
			ValueCompression: varEnc(32), Layers: []enc21pb.RepDefLayer{lNullItem}})}}})
		got, err := readAllJSON(t, f, tSchema(t, [3]string{"s", "string", ""}), map[int32]int{0: 0}, 2)
		check(t, got, err, `["abc",null,""]`)
	})
	t.Run("list", func(t *testing.T) {
		// ["x", null], null, []: control words rep<<2|def.
		buf := append([]byte{1 << 2}, u32le(1)...)
		buf = append(buf, 'x', 0<<2|1, 1<<2|2, 1<<2|3)
		f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{buf}, layout: fullZip(&enc21pb.FullZipLayout{
			BitsRep: 1, BitsDef: 2, Details: &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: 32}, NumItems: 4, NumVisibleItems: 2,
			ValueCompression: varEnc(32), Layers: []enc21pb.RepDefLayer{lNullItem, lNullEmpty}})}}})
		s := tSchema(t, [3]string{"l", "list", ""}, [3]string{"item", "string", "0"})
		got, err := readAllJSON(t, f, s, map[int32]int{1: 0}, 2)
		check(t, got, err, `[["x",null],null,[]]`)
	})
	t.Run("fixed", func(t *testing.T) {
		buf := append([]byte{0}, u64le(7)...)
		buf = append(buf, 1)
		buf = append(buf, u64le(0)...)
		f := testFile21(t, [][]tPage{{{rows: 2, bufs: [][]byte{buf}, layout: fullZip(&enc21pb.FullZipLayout{
			BitsDef: 1, Details: &enc21pb.FullZipLayout_BitsPerValue{BitsPerValue: 64}, NumItems: 2, NumVisibleItems: 2,
			ValueCompression: flatEnc(64), Layers: []enc21pb.RepDefLayer{lNullItem}})}}})
		got, err := readAllJSON(t, f, tSchema(t, [3]string{"x", "uint64", ""}), map[int32]int{0: 0}, 2)
		check(t, got, err, `["7",null]`)
	})
	t.Run("zstd", func(t *testing.T) {
		z, _ := compress.Compress(compress.SchemeZstd, 0, nil, []byte("squeezed"))
		buf := append([]byte{0}, u32le(len(z))...)
		buf = append(buf, z...)
		gen := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
			Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD}, Values: varEnc(32)}}}
		f := testFile21(t, [][]tPage{{{rows: 1, bufs: [][]byte{buf}, layout: fullZip(&enc21pb.FullZipLayout{
			BitsDef: 1, Details: &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: 32}, NumItems: 1, NumVisibleItems: 1,
			ValueCompression: gen, Layers: []enc21pb.RepDefLayer{lNullItem}})}}})
		got, err := readAllJSON(t, f, tSchema(t, [3]string{"s", "binary", ""}), map[int32]int{0: 0}, 2)
		check(t, got, err, `["hex:73717565657a6564"]`)
	})
}

func allNull(layers ...enc21pb.RepDefLayer) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: &enc21pb.ConstantLayout{Layers: layers}}}
}

func TestV21AllNull(t *testing.T) {
	// A simple all-null page between two mini-block pages.
	meta, data := chunks([]int{0}, chunk(0, nil, nil, u64le(1, 2)))
	mb := tPage{rows: 2, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: flatEnc(64), Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 2})}
	f := testFile21(t, [][]tPage{{mb, {rows: 3, layout: allNull(lNullItem)}, mb}})
	s := tSchema(t, [3]string{"x", "int64", ""})
	for _, batch := range []int{1, 4, 10} {
		got, err := readAllJSON(t, f, s, map[int32]int{0: 0}, batch)
		check(t, got, err, `["1","2",null,null,null,"1","2"]`)
	}
	// Complex: list<int64> rows null, [], [null] with u16 rep and def.
	f = testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{u16le(1, 1, 1), u16le(2, 3, 1)}, layout: allNull(lNullItem, lNullEmpty)}}})
	s = tSchema(t, [3]string{"l", "list", ""}, [3]string{"item", "int64", "0"})
	got, err := readAllJSON(t, f, s, map[int32]int{1: 0}, 2)
	check(t, got, err, `[null,[],[null]]`)
}

func TestV21Skip(t *testing.T) {
	pages := listUtf8Pages()
	f := testFile21(t, [][]tPage{{pages[0], pages[0]}})
	s := tSchema(t, [3]string{"l", "list", ""}, [3]string{"item", "string", "0"})
	for _, tc := range []struct {
		skip int
		want string
	}{
		{1, `[null,[],["b"],["c","d"],["a",null],null,[],["b"],["c","d"]]`},
		{5, `[["a",null],null,[],["b"],["c","d"]]`},
		{7, `[[],["b"],["c","d"]]`},
	} {
		r, err := f.NewReader(s.Fields, map[int32]int{1: 0}, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Skip(context.Background(), tc.skip); err != nil {
			t.Fatal(err)
		}
		cols, err := r.Next(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(canonRange(cols[0], 0, cols[0].Len()))
		check(t, string(got), nil, tc.want)
	}
}

// TestV21ByteStreamSplit decodes a hand-built ByteStreamSplit chunk: three
// 64-bit values stored as eight streams of three bytes, byte j of value i at
// offset j*3+i, as lance writes columns that ask for general compression.
func TestV21ByteStreamSplit(t *testing.T) {
	s := tSchema(t, [3]string{"x", "uint64", ""})
	bss := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_ByteStreamSplit{ByteStreamSplit: &enc21pb.ByteStreamSplit{Values: flatEnc(64)}}}
	// Values 0x0102, 0x0304, 0xff00000000000005.
	split := []byte{
		0x02, 0x04, 0x05, // byte 0 of each value
		0x01, 0x03, 0x00, // byte 1
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // bytes 2..6
		0x00, 0x00, 0xff, // byte 7
	}
	meta, data := chunks([]int{0}, chunk(0, nil, nil, split))
	f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: bss, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 3})}}})
	got, err := readAllJSON(t, f, s, map[int32]int{0: 0}, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, nil, `["258","772","18374686479671623685"]`)

	short := split[:20]
	meta, data = chunks([]int{0}, chunk(0, nil, nil, short))
	f = testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
		ValueCompression: bss, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 3})}}})
	if _, err := readAllJSON(t, f, s, map[int32]int{0: 0}, 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated byte-stream-split chunk: err = %v, want ErrCorrupt", err)
	}
}

func TestV21Errors(t *testing.T) {
	s := tSchema(t, [3]string{"x", "uint64", ""})
	t.Run("unsupported", func(t *testing.T) {
		ps := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_PackedStruct{PackedStruct: &enc21pb.PackedStruct{Values: flatEnc(64)}}}
		meta, data := chunks([]int{0}, chunk(0, nil, nil, u64le(1)))
		f := testFile21(t, [][]tPage{{{rows: 1, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
			ValueCompression: ps, Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 1})}}})
		_, err := readAllJSON(t, f, s, map[int32]int{0: 0}, 1)
		if !errors.Is(err, ErrUnsupportedEncoding) || !strings.Contains(err.Error(), "PackedStruct") || !strings.Contains(err.Error(), "t.lance column 0 page 0") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		meta, data := chunks([]int{0}, chunk(0, nil, nil, u64le(1, 2)))
		f := testFile21(t, [][]tPage{{{rows: 3, bufs: [][]byte{meta, data}, layout: miniLayout(&enc21pb.MiniBlockLayout{
			ValueCompression: flatEnc(64), Layers: []enc21pb.RepDefLayer{lValidItem}, NumBuffers: 1, NumItems: 3})}}})
		_, err := readAllJSON(t, f, s, map[int32]int{0: 0}, 1)
		var fe *FormatError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.Column != 0 || fe.File != "t.lance" {
			t.Fatalf("got %v", err)
		}
	})
}
