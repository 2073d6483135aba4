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

// Interop: lancedb 0.31 (lance 8) must read what the writer produces. The
// test wraps each written file in a minimal one-fragment dataset (manifest
// and Overwrite transaction, spec 3.7) and has node print the rows.

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
			FileMajorVersion: 2, FileMinorVersion: 1, FileSizeBytes: uint64(len(file)),
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
		DataFormat:    &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: "2.1"},
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
}

func TestWriterInteropLanceDB(t *testing.T) {
	node, interopDir := interopNode(t)
	root := t.TempDir()
	tables := interopTables(t)
	var args []string
	want := map[string][]byte{}
	for _, tb := range tables {
		s := mustSchema(t, tb.as)
		w, err := NewWriter(s, tb.opts)
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
		args = append(args, arg)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "writer_interop.mjs"))
	for i, tb := range tables {
		cmd := exec.Command(node, script, interopDir, root, args[i])
		cmd.Env = append(os.Environ(), "RUST_LOG=error")
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
