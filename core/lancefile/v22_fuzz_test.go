package lancefile

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	protolite "github.com/aperturerobotics/protobuf-go-lite"

	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
)

// Fuzz targets for the decoders of format 2.2 (and of 2.1's packed structs
// and legacy blobs): arbitrary layouts and buffers, read through the whole
// reader as one of a handful of fields. Nothing may panic, hang or
// allocate beyond what the inputs justify; errors are fine. The seeds are
// the real pages of testdata/v22, e.g.
//
//	go test -run XXX -fuzz '^FuzzConstant22$' -fuzztime 1m -fuzzminimizetime 2s

// fuzzField22 is a field a fuzzed page is read as, and the field whose id
// maps to the page's column.
type fuzzField22 struct {
	field *Field
	col   int32
}

// fuzzFields22 builds the fields a fuzzed page is read as.
func fuzzFields22(t testing.TB) []fuzzField22 {
	type pf = filepb.Field
	blob := map[string][]byte{"ARROW:extension:name": []byte("lance.blob.v2")}
	packed := map[string][]byte{"lance-encoding:packed": []byte("true")}
	trees := [][]*pf{
		{{Name: "x", LogicalType: "uint64"}},
		{{Name: "x", LogicalType: "int32", Nullable: true}},
		{{Name: "x", LogicalType: "bool", Nullable: true}},
		{{Name: "x", LogicalType: "string", Nullable: true}},
		{{Name: "l", LogicalType: "list", Nullable: true}, {Name: "item", LogicalType: "string", ParentId: 0, Nullable: true}},
		{{Name: "s", LogicalType: "struct", Nullable: true}, {Name: "a", LogicalType: "int32", ParentId: 0, Nullable: true}},
		{{Name: "l", LogicalType: "list.struct", Nullable: true}, {Name: "item", LogicalType: "struct", ParentId: 0, Nullable: true},
			{Name: "a", LogicalType: "int32", ParentId: 1, Nullable: true}},
		{{Name: "l", LogicalType: "list", Nullable: true}, {Name: "item", LogicalType: "list", ParentId: 0, Nullable: true},
			{Name: "item", LogicalType: "int64", ParentId: 1, Nullable: true}},
		{{Name: "b", LogicalType: "large_binary", Nullable: true, Metadata: map[string][]byte{"lance-encoding:blob": []byte("true")}}},
		{{Name: "p", LogicalType: "struct", Nullable: true, Metadata: packed},
			{Name: "a", LogicalType: "int32", ParentId: 0}, {Name: "b", LogicalType: "double", ParentId: 0}},
		{{Name: "p", LogicalType: "struct", Nullable: true, Metadata: packed},
			{Name: "a", LogicalType: "int32", ParentId: 0}, {Name: "s", LogicalType: "string", ParentId: 0},
			{Name: "u", LogicalType: "uint8", ParentId: 0}},
		{{Name: "blob", LogicalType: "struct", Nullable: true, Metadata: blob},
			{Name: "data", LogicalType: "large_binary", ParentId: 0, Nullable: true}, {Name: "uri", LogicalType: "string", ParentId: 0, Nullable: true}},
		{{Name: "m", LogicalType: "map", Nullable: true}, {Name: "entries", LogicalType: "struct", ParentId: 0},
			{Name: "key", LogicalType: "string", ParentId: 1}, {Name: "value", LogicalType: "int32", ParentId: 1, Nullable: true}},
		{{Name: "v", LogicalType: "fixed_size_list:float:2", Nullable: true}},
		{{Name: "x", LogicalType: "double", Nullable: true}},
	}
	var out []fuzzField22
	for k, tree := range trees {
		for i, f := range tree {
			f.Id = int32(i)
			if i == 0 {
				f.ParentId = -1
			}
		}
		s, err := SchemaFromProto(tree, nil)
		if err != nil {
			t.Fatal(err)
		}
		col := int32(len(tree) - 1) // the (last) leaf
		switch k {
		case 9, 10, 11: // stored whole in the struct's column
			col = 0
		case 12:
			col = 2 // the key
		}
		out = append(out, fuzzField22{field: s.Fields[0], col: col})
	}
	return out
}

// fuzzSchemaOf picks the fuzz field that fits a page of field fl.
func fuzzSchemaOf(fl *Field) uint8 {
	switch t := fl.Type.(type) {
	case *arrow.StructType:
		switch {
		case isBlobV2(fl):
			return 11
		case fl.Metadata["lance-encoding:packed"] != "":
			for _, m := range t.Fields() {
				if m.Type.ID() == arrow.STRING || m.Type.ID() == arrow.BINARY {
					return 10
				}
			}
			return 9
		}
		return 5
	case *arrow.MapType:
		return 12
	case *arrow.ListType:
		switch t.Elem().(type) {
		case *arrow.StructType:
			return 6
		case *arrow.ListType:
			return 7
		}
		return 4
	case *arrow.LargeBinaryType:
		return 8
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType:
		return 3
	case *arrow.BooleanType:
		return 2
	case *arrow.Uint64Type, *arrow.Int64Type:
		return 0
	case *arrow.Int32Type, *arrow.Int16Type, *arrow.Int8Type:
		return 1
	case *arrow.FixedSizeListType:
		return 13
	}
	return 14
}

// fuzzRead22 reads a one-page column of a file of version v as fuzz field
// schema, whole and after a skip, and checks every array it decodes.
func fuzzRead22(t *testing.T, v Version, layout *enc21pb.PageLayout, bufs [][]byte, rows uint16, schema uint8) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			panic("fuzzRead22 hangs:\n" + string(buf[:runtime.Stack(buf, true)]))
		}
	}()
	fields := fuzzFields22(t)
	ff := fields[int(schema)%len(fields)]
	f := testFileV(t, [][]tPage{{{rows: uint64(rows), bufs: bufs, layout: layout}}}, v)
	for _, skip := range []int{0, 2} {
		r, err := f.NewReader([]*Field{ff.field}, map[int32]int{ff.col: 0}, ReadOptions{})
		if err != nil {
			return
		}
		if err := r.Skip(context.Background(), skip); err != nil {
			continue
		}
		batch := 3
		if rows > 64 {
			batch = 1000
		}
		for r.Rows() > 0 {
			cols, err := r.Next(context.Background(), batch)
			if err != nil {
				break
			}
			if err := array.ValidateFull(cols[0]); err != nil {
				t.Fatalf("decoded an invalid array: %v", err)
			}
		}
	}
}

// seedPage22 is a real page of testdata/v22 with the fuzz field it fits.
type seedPage22 struct {
	tPage
	version Version
	schema  uint8
}

// seedPages22 returns the small pages of the lance 12 tables.
func seedPages22(t testing.TB) []seedPage22 {
	var out []seedPage22
	for _, table := range v22Tables {
		lt := openLanceTable(t, v22DataDir(), table)
		for c := range lt.f.columns {
			var fl *Field
			for _, x := range lt.schema.Fields {
				x.Walk(func(y *Field) {
					if col, ok := lt.columnOf[y.ID]; ok && col == c {
						fl = x
					}
				})
			}
			if fl == nil {
				continue
			}
			for i := range lt.f.columns[c].pages {
				p, err := lt.f.readPage(context.Background(), c, i)
				if err != nil {
					t.Fatal(err)
				}
				pl, err := pageLayout(p.info.enc, lt.f.version)
				if err != nil {
					t.Fatal(err)
				}
				size := 0
				for _, b := range p.bufs {
					size += len(b)
				}
				// Big inputs make the fuzzer's minimization crawl.
				if p.info.rows > 5000 || size > 16<<10 || len(p.bufs) > 3 {
					continue
				}
				out = append(out, seedPage22{tPage{rows: p.info.rows, bufs: p.bufs, layout: pl}, lt.f.version, fuzzSchemaOf(fl)})
			}
		}
	}
	return out
}

// addSeeds22 adds the seeds whose layout want picks, as read by their own
// fuzz field and by one other.
func addSeeds22(f *testing.F, v Version, want func(*enc21pb.PageLayout) protolite.Message) {
	for _, p := range seedPages22(f) {
		if p.version != v {
			continue
		}
		m := want(p.layout)
		if m == nil {
			continue
		}
		lb, err := m.MarshalVT()
		if err != nil {
			f.Fatal(err)
		}
		var b [3][]byte
		for i := range min(3, len(p.bufs)) {
			b[i] = p.bufs[i]
		}
		f.Add(lb, b[0], b[1], b[2], uint16(len(p.bufs)), uint16(p.rows), p.schema)
		f.Add(lb, b[0], b[1], b[2], uint16(len(p.bufs)), uint16(p.rows), p.schema+1)
	}
}

// fuzzBufs22 returns the first n of three buffers (a page's buffer count
// matters to constant pages).
func fuzzBufs22(n uint16, b0, b1, b2 []byte) [][]byte {
	return [][]byte{b0, b1, b2}[:min(int(n), 3)]
}

func FuzzMiniBlock22(f *testing.F) {
	addSeeds22(f, V2_2, func(l *enc21pb.PageLayout) protolite.Message {
		if m := l.GetMiniBlockLayout(); m != nil {
			return m
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, nb, rows uint16, schema uint8) {
		var mb enc21pb.MiniBlockLayout
		if mb.UnmarshalVT(layout) != nil {
			return
		}
		fuzzRead22(t, V2_2, miniLayout(&mb), fuzzBufs22(max(nb, 2), b0, b1, b2), rows, schema)
	})
}

func FuzzConstant22(f *testing.F) {
	addSeeds22(f, V2_2, func(l *enc21pb.PageLayout) protolite.Message {
		if m := l.GetConstantLayout(); m != nil {
			return m
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, nb, rows uint16, schema uint8) {
		var cl enc21pb.ConstantLayout
		if cl.UnmarshalVT(layout) != nil {
			return
		}
		pl := &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: &cl}}
		fuzzRead22(t, V2_2, pl, fuzzBufs22(nb, b0, b1, b2), rows, schema)
	})
}

func FuzzFullZip22(f *testing.F) {
	addSeeds22(f, V2_2, func(l *enc21pb.PageLayout) protolite.Message {
		if m := l.GetFullZipLayout(); m != nil {
			return m
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, nb, rows uint16, schema uint8) {
		var fz enc21pb.FullZipLayout
		if fz.UnmarshalVT(layout) != nil {
			return
		}
		fuzzRead22(t, V2_2, fullZip(&fz), fuzzBufs22(max(nb, 1), b0, b1, b2), rows, schema)
	})
}

func FuzzBlobPage21(f *testing.F) {
	addSeeds22(f, V2_1, func(l *enc21pb.PageLayout) protolite.Message {
		if m := l.GetBlobLayout(); m != nil {
			return m
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, layout, b0, b1, b2 []byte, nb, rows uint16, schema uint8) {
		var bl enc21pb.BlobLayout
		if bl.UnmarshalVT(layout) != nil {
			return
		}
		pl := &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_BlobLayout{BlobLayout: &bl}}
		fuzzRead22(t, V2_1, pl, fuzzBufs22(max(nb, 2), b0, b1, b2), rows, schema)
	})
}

// FuzzRleBlock decodes arbitrary buffers as RLE blocks (2.2's level
// compression): a block decodes to exactly the values its runs count, or
// fails.
func FuzzRleBlock(f *testing.F) {
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 97}, 98, uint8(2))
	for _, table := range []string{"levels", "consts"} {
		lt := openLanceTable(f, v22DataDir(), table)
		for c := range lt.f.columns {
			p, err := lt.f.readPage(context.Background(), c, 0)
			if err != nil {
				f.Fatal(err)
			}
			pl, _ := pageLayout(p.info.enc, V2_2)
			if cl := pl.GetConstantLayout(); cl != nil && cl.GetDefCompression().GetRle() != nil && len(p.bufs) == 2 {
				f.Add(p.bufs[1], int(cl.GetNumDefValues()), uint8(2))
			}
		}
	}
	f.Fuzz(func(t *testing.T, buf []byte, n int, w uint8) {
		width := []int{1, 2, 4, 8}[w%4]
		total, err := rleTotal(buf, width)
		if err != nil {
			return
		}
		n = min(max(n, 0), 1<<20)
		v, err := decodeRleBlock(buf, n, width)
		if (err == nil) != (total == n) {
			t.Fatalf("%d values in runs, decoding %d: %v", total, n, err)
		}
		if err == nil && (v.n != n || len(v.data) != n*width) {
			t.Fatalf("decoded %d values (%d bytes), want %d", v.n, len(v.data), n)
		}
	})
}

// TestV22SeedPages checks that the seeds cover what the fuzz targets are
// for: every kind of layout lance 12 writes, from the committed tables.
func TestV22SeedPages(t *testing.T) {
	kinds := map[string]int{}
	for _, p := range seedPages22(t) {
		switch l := p.layout.GetLayout().(type) {
		case *enc21pb.PageLayout_MiniBlockLayout:
			kinds["mini-block"]++
			if l.MiniBlockLayout.GetDictionary() != nil {
				kinds["dictionary"]++
			}
		case *enc21pb.PageLayout_ConstantLayout:
			kinds["constant"]++
			if l.ConstantLayout.InlineValue == nil && l.ConstantLayout.GetDefCompression() != nil {
				kinds["compressed levels"]++
			}
		case *enc21pb.PageLayout_FullZipLayout:
			kinds["full-zip"]++
			if l.FullZipLayout.GetValueCompression().GetVariablePackedStruct() != nil {
				kinds["packed rows"]++
			}
		case *enc21pb.PageLayout_BlobLayout:
			kinds["legacy blob"]++
		}
	}
	for _, k := range []string{"mini-block", "dictionary", "constant", "compressed levels", "full-zip", "packed rows", "legacy blob"} {
		if kinds[k] == 0 {
			t.Errorf("no seed page of kind %s (%v)", k, kinds)
		}
	}
}
