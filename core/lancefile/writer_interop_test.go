package lancefile

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/jsonl"
)

// Interop: lancedb 0.31 (lance 8) must read the 2.1 files the writer
// produces, and lancedb 0.39 (lance 12) the 2.2 ones. The test wraps each
// written file in a minimal one-fragment dataset (manifest and Overwrite
// transaction, spec 3.7) and has node print the rows.

// interopNode returns node and tests/interop, where lancedb 0.31 is
// installed (npm ci there); it skips the test when either is missing, and
// fails it instead when CI=true.
func interopNode(t *testing.T) (node, interopDir string) {
	t.Helper()
	inCI := os.Getenv("CI") == "true"
	if testing.Short() && !inCI {
		t.Skip("-short: skipping the lancedb interop test")
	}
	node, err := exec.LookPath("node")
	interopDir, _ = filepath.Abs(filepath.Join("..", "..", "tests", "interop"))
	if err == nil {
		if _, err = os.Stat(filepath.Join(interopDir, "node_modules", "@lancedb", "lancedb")); err != nil {
			err = fmt.Errorf("lancedb not installed in %s (run npm ci there)", interopDir)
		}
	}
	if err != nil {
		if inCI {
			t.Fatalf("CI=true but the interop test cannot run: %v", err)
		}
		t.Skipf("skipping the lancedb interop test: %v", err)
	}
	return node, interopDir
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// lance12Dir returns the folder whose node_modules holds lancedb 0.39
// (lance 12): KV0_LANCEDB12, else tests/interop/lance12 (npm ci there). It
// skips the test when there is none, and fails it when CI=true and the
// folder's package.json is there but not its install.
func lance12Dir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KV0_LANCEDB12")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("..", "..", "tests", "interop", "lance12"))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb")); err != nil {
		if _, perr := os.Stat(filepath.Join(dir, "package.json")); perr == nil && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but lancedb 0.39 is not installed in %s (run npm ci there)", dir)
		}
		t.Skipf("skipping the lance 12 interop test: no lancedb 0.39 in %s (set KV0_LANCEDB12 to a folder where npm i -E @lancedb/lancedb@0.39.0 apache-arrow@18.1.0 ran)", dir)
	}
	return dir
}

// writeDataset writes file as the only data file of a new dataset at dir.
func writeDataset(t *testing.T, dir string, s *Schema, w *Writer, file []byte) {
	t.Helper()
	for _, d := range []string{"data", "_versions", "_transactions"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := randomHex(16) + ".lance"
	if err := os.WriteFile(filepath.Join(dir, "data", name), file, 0o644); err != nil {
		t.Fatal(err)
	}
	frag := &tablepb.DataFragment{
		Id: 0,
		Files: []*tablepb.DataFile{{
			Path: name, Fields: w.FieldIDs(), ColumnIndices: w.ColumnIndices(),
			FileMajorVersion: uint32(w.Version().Major), FileMinorVersion: uint32(w.Version().Minor), FileSizeBytes: uint64(len(file)),
		}},
		PhysicalRows: w.Rows(),
	}
	sp := schemaProto(s)
	uuid := randomHex(16)
	txn := &tablepb.Transaction{ReadVersion: 0, Uuid: uuid, Operation: &tablepb.Transaction_Overwrite_{
		Overwrite: &tablepb.Transaction_Overwrite{Fragments: []*tablepb.DataFragment{frag}, Schema: sp.Fields, SchemaMetadata: sp.Metadata}}}
	tb, err := txn.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	txnName := "0-" + uuid + ".txn"
	if err := os.WriteFile(filepath.Join(dir, "_transactions", txnName), tb, 0o644); err != nil {
		t.Fatal(err)
	}
	var zero uint32
	m := &tablepb.Manifest{
		Fields: sp.Fields, SchemaMetadata: sp.Metadata, Fragments: []*tablepb.DataFragment{frag}, Version: 1,
		Timestamp: wktpb.NewTimestamp(time.Now()), MaxFragmentId: &zero, TransactionFile: txnName,
		WriterVersion: &tablepb.Manifest_WriterVersion{Library: "lance-go", Version: "0.1.0"},
		DataFormat:    &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: w.Version().String()},
	}
	mb, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(mb)))
	buf = append(buf, mb...)
	buf = binary.LittleEndian.AppendUint64(buf, 0) // manifest position
	buf = binary.LittleEndian.AppendUint16(buf, 0)
	buf = binary.LittleEndian.AppendUint16(buf, 2)
	buf = append(buf, "LANC"...)
	if err := os.WriteFile(filepath.Join(dir, "_versions", "18446744073709551614.manifest"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

type interopTable struct {
	name  string
	casts string // "col,col=Type,...": every column, some read through arrow_cast
	as    *arrow.Schema
	recs  []arrow.RecordBatch
	opts  WriterOptions
	// sample: the first column is an int32 "id"; lancedb also reads the
	// rows whose id is 5 modulo 97 (a filter, so it decodes the other
	// columns of those rows only: random access into pages and chunks).
	sample bool
}

// sampleWhere is the filter of interopTable.sample.
const sampleWhere = "id % 97 = 5"

// TestWriterInteropLanceDB has lance 8 read 2.1 files.
func TestWriterInteropLanceDB(t *testing.T) {
	node, interopDir := interopNode(t)
	writerInterop(t, node, interopDir, interopDir, V2_1, interopTables(t))
}

// TestWriterInteropLance12 has lance 12 read 2.2 files: the tables of the
// 2.1 test and ones made for the encodings only 2.2 files use (constant
// pages, dictionaries of 64-bit values, run-length encoded values and
// levels), each value compared.
func TestWriterInteropLance12(t *testing.T) {
	node, interopDir := interopNode(t)
	l12 := lance12Dir(t)
	writerInterop(t, node, interopDir, l12, V2_2, append(interopTables(t), interopTables22(t)...))
}

// writerInterop writes each table as a file of version v, wraps it in a
// dataset and compares the rows the lancedb installed in lancedbDir reads
// with the rows written.
func writerInterop(t *testing.T, node, interopDir, lancedbDir string, v Version, tables []interopTable) {
	root := t.TempDir()
	var args []string
	want := map[string][]byte{}
	for _, tb := range tables {
		s := mustSchema(t, tb.as)
		opts := tb.opts
		opts.Version = v
		w, err := NewWriter(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		var js bytes.Buffer
		jw := jsonl.NewWriter(&js)
		for _, r := range tb.recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
			if err := jw.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		file, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		writeDataset(t, filepath.Join(root, tb.name+".lance"), s, w, file)
		want[tb.name] = []byte(fmt.Sprintf("## %s %d\n%s", tb.name, w.Rows(), js.Bytes()))
		arg := tb.name
		if tb.casts != "" {
			arg += ":" + tb.casts
		}
		if tb.sample {
			var sel bytes.Buffer
			sw := jsonl.NewWriter(&sel)
			n := 0
			for _, r := range tb.recs {
				ids := r.Column(0).(*array.Int32)
				for i := range int(r.NumRows()) {
					if ids.Value(i)%97 == 5 {
						row := r.NewSlice(int64(i), int64(i+1))
						if err := sw.Write(row); err != nil {
							t.Fatal(err)
						}
						row.Release()
						n++
					}
				}
			}
			want[tb.name] = fmt.Appendf(want[tb.name], "## %s@ %d\n%s", tb.name, n, sel.Bytes())
			arg += "@" + sampleWhere
		}
		args = append(args, arg)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "writer_interop.mjs"))
	for i, tb := range tables {
		cmd := exec.Command(node, script, interopDir, root, args[i])
		cmd.Env = append(os.Environ(), "RUST_LOG=error", "KV0_LANCEDB_DIR="+lancedbDir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("table %s: node: %v\n%s", tb.name, err, clip(stderr.String()))
			continue
		}
		if !bytes.Equal(out, want[tb.name]) {
			t.Errorf("table %s: lancedb read differs from what was written:\n%s", tb.name, firstDiff(want[tb.name], out))
		}
	}
}

func firstDiff(want, got []byte) string {
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d (of %d / %d):\nwant %s\ngot  %s", i+1, len(wl), len(gl), clip(w), clip(g))
		}
	}
	return "equal"
}

func interopTables(t *testing.T) []interopTable {
	rng := mrand.New(mrand.NewPCG(42, 7))
	var tables []interopTable

	// Every scalar type, nullable and not, with lists, structs and long
	// strings, over several pages and chunks.
	{
		fields := []arrow.Field{
			{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
			{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
			{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
			{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
			{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
			{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
			{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
			{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
			{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
			{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
			{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
			{Name: "tsn", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
			{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
			{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			{Name: "li", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
			{Name: "st", Type: arrow.StructOf(
				arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
			{Name: "lst", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true})), Nullable: true},
			{Name: "ll", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), Nullable: true},
			{Name: "nulls", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		}
		as := arrow.NewSchema(fields, nil)
		var recs []arrow.RecordBatch
		start := 0
		for _, n := range []int{3000, 7000, 1} {
			cols := make([]arrow.Array, len(fields))
			for i, f := range fields {
				switch f.Name {
				case "seq":
					b := array.NewUint64Builder(memory.DefaultAllocator)
					for k := range n {
						b.Append(uint64(start + k))
					}
					cols[i] = b.NewArray()
				case "nulls":
					cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, n)
				default:
					np := 0.0
					if f.Nullable {
						np = 0.15
					}
					cols[i] = randomArray(rng, f.Type, n, np, 0)
				}
			}
			recs = append(recs, array.NewRecordBatch(as, cols, int64(n)))
			start += n
		}
		tables = append(tables, interopTable{name: "types", as: as, recs: recs, opts: WriterOptions{MaxPageRows: 2500}})
	}
	// Long values: full-zip pages, values larger than a mini-block chunk,
	// lists of long strings.
	{
		fields := []arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int32},
			{Name: "doc", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "blob", Type: arrow.BinaryTypes.Binary},
			{Name: "docs", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		}
		as := arrow.NewSchema(fields, nil)
		n := 300
		cols := make([]arrow.Array, len(fields))
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		for k := range n {
			ib.Append(int32(k))
		}
		cols[0] = ib.NewArray()
		cols[1] = randomArray(rng, fields[1].Type, n, 0.2, 0.5)
		cols[2] = randomArray(rng, fields[2].Type, n, 0, 0.5)
		cols[3] = randomArray(rng, fields[3].Type, n, 0.2, 0.3)
		tables = append(tables, interopTable{name: "long", as: as, recs: []arrow.RecordBatch{array.NewRecordBatch(as, cols, int64(n))}, opts: WriterOptions{MaxPageRows: 100}})
	}
	// Large lists, read through a cast (arrow-js has no LargeList).
	{
		fields := []arrow.Field{{Name: "big", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int64), Nullable: true}}
		as := arrow.NewSchema(fields, nil)
		rec := recordFromJSON(t, as, `[{"big":[1,2,null]},{"big":[]},{"big":null},{"big":[9223372036854775807]}]`)
		tables = append(tables, interopTable{name: "large", casts: "big=List(Int64)", as: as, recs: []arrow.RecordBatch{rec}})
	}
	// Runs of empty and null lists longer than a mini-block chunk holds.
	{
		fields := []arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}}
		as := arrow.NewSchema(fields, nil)
		b := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int32)
		vb := b.ValueBuilder().(*array.Int32Builder)
		for k := range 30000 {
			switch {
			case k%9000 == 8999:
				b.Append(true)
				vb.Append(int32(k))
			case k%2 == 0:
				b.AppendEmptyValue()
			default:
				b.AppendNull()
			}
		}
		arr := b.NewArray()
		tables = append(tables, interopTable{name: "sparse", as: as, recs: []arrow.RecordBatch{array.NewRecordBatch(as, []arrow.Array{arr}, int64(arr.Len()))}})
	}
	// The metrics shape with default options: bit-packed pages.
	{
		rec := metricsBatch(0, 200000)
		tables = append(tables, interopTable{name: "metrics", as: rec.Schema(), recs: []arrow.RecordBatch{rec}})
	}
	return tables
}

// interopTables22 are tables whose values make the 2.2 writer use each of
// its encodings: constant pages (inline and value-buffer scalars, with and
// without levels, in lists and structs), all-null pages of nested fields
// (RLE-compressed levels), dictionaries of 64-bit values with bit-packed
// and run-length encoded indices, run-length encoded values and levels,
// over many pages.
func interopTables22(t *testing.T) []interopTable {
	mem := memory.DefaultAllocator
	rng := mrand.New(mrand.NewPCG(22, 12))
	const n = 30000
	var tables []interopTable
	type gen struct {
		f    arrow.Field
		make func(b array.Builder, i int) // appends row i
	}
	build := func(gens []gen) (*arrow.Schema, arrow.RecordBatch) {
		fields := make([]arrow.Field, len(gens))
		for i, g := range gens {
			fields[i] = g.f
		}
		as := arrow.NewSchema(fields, nil)
		cols := make([]arrow.Array, len(gens))
		for i, g := range gens {
			b := array.NewBuilder(mem, g.f.Type)
			for r := range n {
				g.make(b, r)
			}
			cols[i] = b.NewArray()
			b.Release()
		}
		return as, array.NewRecordBatch(as, cols, n)
	}
	idGen := gen{arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32}, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i)) }}
	nullEvery := func(b array.Builder, i, k int) bool {
		if i%k == k-1 {
			b.AppendNull()
			return true
		}
		return false
	}
	// Constant values.
	{
		long := strings.Repeat("x", 300)
		gens := []gen{
			idGen,
			{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(7) }},
			{arrow.Field{Name: "i32n", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 10) {
					b.(*array.Int32Builder).Append(5)
				}
			}},
			{arrow.Field{Name: "u8", Type: arrow.PrimitiveTypes.Uint8}, func(b array.Builder, i int) { b.(*array.Uint8Builder).Append(200) }},
			{arrow.Field{Name: "i16n", Type: arrow.PrimitiveTypes.Int16, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 3) {
					b.(*array.Int16Builder).Append(-2)
				}
			}},
			{arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean}, func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(true) }},
			{arrow.Field{Name: "bf", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 7) {
					b.(*array.BooleanBuilder).Append(false)
				}
			}},
			{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64}, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(3.25) }},
			{arrow.Field{Name: "f32n", Type: arrow.PrimitiveTypes.Float32, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 4) {
					b.(*array.Float32Builder).Append(-0.5)
				}
			}},
			{arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}, func(b array.Builder, i int) {
				b.(*array.TimestampBuilder).Append(1_700_000_000_000_000)
			}},
			{arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32}, func(b array.Builder, i int) { b.(*array.Date32Builder).Append(19000) }},
			{arrow.Field{Name: "s", Type: arrow.BinaryTypes.String}, func(b array.Builder, i int) { b.(*array.StringBuilder).Append("same") }},
			{arrow.Field{Name: "sn", Type: arrow.BinaryTypes.String, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 10) {
					b.(*array.StringBuilder).Append("k")
				}
			}},
			{arrow.Field{Name: "empty", Type: arrow.BinaryTypes.String}, func(b array.Builder, i int) { b.(*array.StringBuilder).Append("") }},
			{arrow.Field{Name: "ls", Type: arrow.BinaryTypes.LargeString}, func(b array.Builder, i int) { b.(*array.LargeStringBuilder).Append(long) }},
			{arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 5) {
					b.(*array.BinaryBuilder).Append([]byte{0, 1, 2, 255})
				}
			}},
			{arrow.Field{Name: "li", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				switch i % 9 {
				case 3:
					lb.AppendNull()
				case 5:
					lb.AppendEmptyValue()
				default:
					lb.Append(true)
					for range i % 4 {
						lb.ValueBuilder().(*array.Int32Builder).Append(7)
					}
				}
			}},
			{arrow.Field{Name: "lsn", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				if i%11 == 0 {
					lb.AppendNull()
					return
				}
				lb.Append(true)
				vb := lb.ValueBuilder().(*array.StringBuilder)
				for k := range 1 + i%3 {
					if k == 1 {
						vb.AppendNull()
					} else {
						vb.Append("tag")
					}
				}
			}},
			{arrow.Field{Name: "st", Type: arrow.StructOf(
				arrow.Field{Name: "c", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true}, func(b array.Builder, i int) {
				sb := b.(*array.StructBuilder)
				if i%6 == 1 {
					sb.AppendNull()
					return
				}
				sb.Append(true)
				sb.FieldBuilder(0).(*array.StringBuilder).Append("same")
				if i%5 == 0 {
					sb.FieldBuilder(1).AppendNull()
				} else {
					sb.FieldBuilder(1).(*array.Int64Builder).Append(-1)
				}
			}},
		}
		as, rec := build(gens)
		tables = append(tables, interopTable{name: "consts", as: as, recs: []arrow.RecordBatch{rec}, opts: WriterOptions{MaxPageRows: 7000}, sample: true})
	}
	// Columns without a valid value.
	{
		gens := []gen{
			{arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32}, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i)) }},
			{arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(b array.Builder, i int) { b.AppendNull() }},
			{arrow.Field{Name: "ns", Type: arrow.BinaryTypes.String, Nullable: true}, func(b array.Builder, i int) { b.AppendNull() }},
			{arrow.Field{Name: "nl", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}, func(b array.Builder, i int) { b.AppendNull() }},
			{arrow.Field{Name: "el", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				switch i % 3 {
				case 0:
					lb.AppendEmptyValue()
				case 1:
					lb.AppendNull()
				default:
					lb.Append(true)
					lb.ValueBuilder().AppendNull()
					lb.ValueBuilder().AppendNull()
				}
			}},
			{arrow.Field{Name: "nst", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true}, func(b array.Builder, i int) {
				sb := b.(*array.StructBuilder)
				if i%2 == 0 {
					sb.AppendNull()
					return
				}
				sb.Append(true)
				sb.FieldBuilder(0).AppendNull()
			}},
		}
		as, rec := build(gens)
		tables = append(tables, interopTable{name: "nulls22", as: as, recs: []arrow.RecordBatch{rec}, opts: WriterOptions{MaxPageRows: 9000}, sample: true})
	}
	// Few distinct values and runs.
	{
		steps := func(i int) int64 { return int64(i / 100) }
		pool := make([]uint64, 1500)
		for i := range pool {
			pool[i] = rng.Uint64()
		}
		gens := []gen{
			idGen,
			{arrow.Field{Name: "series", Type: arrow.PrimitiveTypes.Uint64}, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(1_000_000 + uint64(i%100)) }},
			{arrow.Field{Name: "step", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(steps(i)) }},
			{arrow.Field{Name: "step8", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 1000) {
					b.(*array.Int64Builder).Append(int64(i / 8))
				}
			}},
			{arrow.Field{Name: "seven", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 13) {
					b.(*array.Int64Builder).Append(int64(rng.IntN(7)) * 1_000_000_007)
				}
			}},
			{arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64}, func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i/50%400) * 0.125) }},
			{arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 17) {
					b.(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000_000 + int64(rng.IntN(10))*3_600_000_000_000))
				}
			}},
			{arrow.Field{Name: "pool40", Type: arrow.PrimitiveTypes.Uint64}, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(pool[rng.IntN(len(pool))] >> 24) }},
			{arrow.Field{Name: "pool40k", Type: arrow.PrimitiveTypes.Uint64}, func(b array.Builder, i int) { b.(*array.Uint64Builder).Append(pool[rng.IntN(1024)] >> 24) }},
			{arrow.Field{Name: "pool40t", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(pool[rng.IntN(1030)] >> 24)) }},
			{arrow.Field{Name: "pool64", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(b array.Builder, i int) {
				if !nullEvery(b, i, 50) {
					b.(*array.Int64Builder).Append(int64(pool[rng.IntN(len(pool))]))
				}
			}},
			{arrow.Field{Name: "neg", Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(-int64(i % 30)) }},
			{arrow.Field{Name: "r32", Type: arrow.PrimitiveTypes.Int32}, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i / 700)) }},
			{arrow.Field{Name: "r16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true}, func(b array.Builder, i int) {
				if i/1000%5 == 2 {
					b.AppendNull()
				} else {
					b.(*array.Uint16Builder).Append(uint16(i / 300))
				}
			}},
			{arrow.Field{Name: "r8", Type: arrow.PrimitiveTypes.Int8}, func(b array.Builder, i int) { b.(*array.Int8Builder).Append(int8(i / 1000)) }},
			{arrow.Field{Name: "l64", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				if i%20 == 19 {
					lb.AppendNull()
					return
				}
				lb.Append(true)
				for k := range i % 5 {
					lb.ValueBuilder().(*array.Int64Builder).Append(int64((i+k)%3) << 40)
				}
			}},
			{arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true}), Nullable: true}, func(b array.Builder, i int) {
				sb := b.(*array.StructBuilder)
				if i/400%3 == 1 {
					sb.AppendNull()
					return
				}
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Uint64Builder).Append(uint64(rng.IntN(20)) * 0xFFFF_FFFF_FF)
			}},
		}
		as, rec := build(gens)
		tables = append(tables, interopTable{name: "dict", as: as, recs: []arrow.RecordBatch{rec}, opts: WriterOptions{MaxPageRows: 8192}, sample: true})
		// The rows twice in one page: chunks of run-length encoded values
		// hold up to 32Ki values.
		tables = append(tables, interopTable{name: "dict1", as: as, recs: []arrow.RecordBatch{rec, rec}, sample: true})
	}
	// Levels in long runs: nullable lists and structs whose nulls come in
	// blocks, lists of lists.
	{
		gens := []gen{
			idGen,
			{arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				switch {
				case i/500%4 == 1:
					lb.AppendNull()
				case i/500%4 == 2:
					lb.AppendEmptyValue()
				default:
					lb.Append(true)
					for range 3 {
						lb.ValueBuilder().(*array.Float32Builder).Append(rng.Float32())
					}
				}
			}},
			{arrow.Field{Name: "ll", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), Nullable: true}, func(b array.Builder, i int) {
				lb := b.(*array.ListBuilder)
				if i/300%3 == 0 {
					lb.AppendNull()
					return
				}
				lb.Append(true)
				inner := lb.ValueBuilder().(*array.ListBuilder)
				for k := range 2 {
					inner.Append(true)
					for j := range k + 1 {
						inner.ValueBuilder().(*array.Int64Builder).Append(int64(i*7 + j))
					}
				}
			}},
			{arrow.Field{Name: "st", Type: arrow.StructOf(
				arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true}, func(b array.Builder, i int) {
				sb := b.(*array.StructBuilder)
				if i/250%2 == 1 {
					sb.AppendNull()
					return
				}
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(rng.Uint32()))
				sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", i))
			}},
		}
		as, rec := build(gens)
		tables = append(tables, interopTable{name: "levels", as: as, recs: []arrow.RecordBatch{rec}, sample: true})
	}
	return tables
}
