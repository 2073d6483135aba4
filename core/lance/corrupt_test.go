package lance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// fixtureManifest is the latest manifest of the "default" fixture (version
// 6: one fragment of 189 rows, one 2.1 data file, columns seq, op and key
// NOT NULL and value nullable).
const fixtureManifest = "kv.lance/_versions/18446744073709551609.manifest"

// tableText is what a scan of a whole table gives, rendered as text: the
// names of the columns and of their nested fields (a list's item, a
// struct's members), the column types without those names (with
// nullability) and the rows, each a JSON array of values in column order
// (a struct's value is the array of its members' values).
type tableText struct{ names, types, rows string }

// typeShape writes dt without the names of its nested fields, which it
// appends to names, one a line.
func typeShape(dt arrow.DataType, names *strings.Builder) string {
	nt, ok := dt.(arrow.NestedType)
	if !ok {
		return dt.String()
	}
	var b strings.Builder
	b.WriteString(dt.Name())
	if fl, ok := dt.(*arrow.FixedSizeListType); ok {
		fmt.Fprintf(&b, "[%d]", fl.Len())
	}
	b.WriteByte('<')
	for i, f := range nt.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		names.WriteString(f.Name + "\n")
		b.WriteString(typeShape(f.Type, names))
		if f.Nullable {
			b.WriteString(" nullable")
		}
	}
	b.WriteByte('>')
	return b.String()
}

// plainValue is value i of a, for JSON, with a struct as the array of its
// members' values: the names belong in tableText.names.
func plainValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Struct:
		out := make([]any, a.NumField())
		for k := range out {
			out[k] = plainValue(a.Field(k), i)
		}
		return out
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for k := start; k < end; k++ {
			out = append(out, plainValue(a.ListValues(), int(k)))
		}
		return out
	}
	return a.GetOneForMarshal(i)
}

// renderTable reads every row of the latest version of the dataset at root,
// or returns the error of opening or scanning it.
func renderTable(ctx context.Context, st store.Store, root string) (tableText, error) {
	return renderVersion(ctx, st, root, 0)
}

// renderVersion is renderTable for version v (0: the latest).
func renderVersion(ctx context.Context, st store.Store, root string, v uint64) (tableText, error) {
	d, err := Open(ctx, st, root, OpenOptions{Version: v})
	if err != nil {
		return tableText{}, err
	}
	s, err := d.Scan(ctx, ScanOptions{})
	if err != nil {
		return tableText{}, err
	}
	defer s.Close()
	var out tableText
	var names strings.Builder
	for _, f := range s.Schema().Fields() {
		names.WriteString(f.Name + "\n")
		out.types += fmt.Sprintf("%s nullable=%v\n", typeShape(f.Type, &names), f.Nullable)
	}
	out.names = names.String()
	var b strings.Builder
	for s.Next() {
		rec := s.Record()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for c, col := range rec.Columns() {
				row[c] = plainValue(col, i)
			}
			j, err := json.Marshal(row)
			if err != nil {
				return tableText{}, err
			}
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	out.rows = b.String()
	return out, s.Err()
}

// isTyped reports whether err is one of the typed errors a damaged dataset
// may give: corruption (of a manifest or of a data file), a missing file
// (a damaged path), or an unsupported feature, version or type (damaged
// flags, version numbers or logical types).
func isTyped(err error) bool {
	for _, s := range []error{ErrCorrupt, lancefile.ErrCorrupt, ErrNotFound, ErrUnsupportedFeature,
		lancefile.ErrUnsupportedVersion, lancefile.ErrUnsupportedEncoding, lancefile.ErrUnsupportedType, store.ErrNotFound} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestManifestByte533 is the reproduction of issue 11, item 2: byte 533 of
// the fixture's manifest is the tag of the data file's column_indices;
// flipped, the indices vanish and the reader used to return 189 rows of
// nulls for the NOT NULL columns with no error.
func TestManifestByte533(t *testing.T) {
	ctx := t.Context()
	st := loadFixture(t, "default")
	b, err := store.ReadAll(ctx, st, fixtureManifest)
	if err != nil {
		t.Fatal(err)
	}
	b[533] ^= 0xff
	if err := st.Put(ctx, fixtureManifest, b); err != nil {
		t.Fatal(err)
	}
	out, err := renderTable(ctx, st, "kv.lance")
	if err == nil {
		t.Fatalf("byte 533 flipped: no error, read\n%.300s", out.rows)
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fixtureManifest) {
		t.Fatalf("byte 533 flipped: %v; want ErrCorrupt naming %s", err, fixtureManifest)
	}
}

// TestManifestByteFlips flips each byte of the fixture's manifest in turn,
// three ways (all bits, the low bit, the high bit), and reads the whole
// table: each damaged manifest must fail with a typed error or give the
// original column types and rows. Never a panic, never other values.
//
// What no check can see. The manifest has no checksum, so a flip that
// yields another valid manifest whose reading is unchanged goes unnoticed,
// and the test accepts it. Mapped field by field on both manifests, those
// are: the inline transaction section before the manifest (only the change
// log and conflict resolution read it) and the manifest's pointer to it;
// the timestamp; the transaction file name; the writer's library and
// version strings; data_format (file_format and version strings: the data
// files' own versions are what is read, and are checked); the legacy
// per-field encoding enum; a larger max_fragment_id; the upper bytes of a
// parent_id of -1, which protobuf writes as a 10-byte varint and truncates
// to 32 bits on reading; the footer's legacy version constants. One class
// changes what a reader sees: a flip inside a column name that leaves it
// valid UTF-8 ("seq" becomes "req"). Lance renames columns by rewriting the
// manifest alone (the data files keep the old names), so no name can be
// checked against anything; the test accepts such a flip only when the
// types and every value are unchanged, and counts them. Everything that
// changes values (row counts, column indices, field ids and format version
// of the data file, the schema's ids, parents, types and nullability,
// damaged tags) is caught.
//
// The same sweep runs over the latest manifest of a dataset kv0 writes the
// way the key-value layer does (two appends of put and delete rows, so two
// fragments and a nullable value with nulls), where such flips used to
// turn key "k1" into an empty key.
func TestManifestByteFlips(t *testing.T) {
	t.Run("lance fixture", func(t *testing.T) {
		st := loadFixture(t, "default")
		sweepManifest(t, st, "kv.lance", fixtureManifest, 0, 189, oplogNames)
	})
	t.Run("lance fixture with deletion files", func(t *testing.T) {
		// Version 4: two fragments, each with a deletion file. A flipped
		// bit in the tag of a deletion file makes it an unknown field,
		// which readers skip; the bytes it swallows take the fragment's
		// physical row count too, which checkUnrecordedRows catches.
		st := loadFixture(t, "default")
		sweepManifest(t, st, "kv.lance", fixtureV4, 4, 189, oplogNames)
	})
	t.Run("kv0 oplog", func(t *testing.T) {
		st := store.NewMemory()
		key := writeOplog(t, st, "db.lance")
		sweepManifest(t, st, "db.lance", key, 0, 6, oplogNames)
	})
	t.Run("kv0 struct", func(t *testing.T) {
		// A struct's members are Field messages in the middle of the
		// manifest's run of fields; some are as long as their first byte
		// says plus one, so that a flipped high bit in their tag makes an
		// unknown field that swallows exactly the member (checkRuns).
		st := store.NewMemory()
		key, names := writeStructs(t, st, "st.lance")
		sweepManifest(t, st, "st.lance", key, 0, 3, names)
	})
}

// oplogNames are the columns of the fixtures and of writeOplog.
const oplogNames = "seq\nop\nkey\nvalue\n"

// writeStructs writes a dataset of three rows with a struct of members of
// names of one to six letters (string and int32 each), and returns the key
// of its manifest and the table's names (tableText.names). Every member
// holds a value, and a null under a valid parent, so that a damaged
// nullable flag fails the read.
func writeStructs(t *testing.T, st store.Store, root string) (key, names string) {
	t.Helper()
	var members []arrow.Field
	var row1, row3 []string
	names = "id\ns\n"
	for i, n := range []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff"} {
		members = append(members, arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: n + "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
		row1 = append(row1, fmt.Sprintf(`"%s": "%s", "%si": %d`, n, strings.ToUpper(n), n, i))
		row3 = append(row3, fmt.Sprintf(`"%s": null, "%si": null`, n, n))
		names += n + "\n" + n + "i\n"
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(members...), Nullable: true},
		// Not nullable: a flipped bit can give a nullable column an id no
		// data file holds, which reads as a column of nulls (lance adds
		// nullable columns without data; see docs/architecture.md).
		{Name: "tail", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	names += "tail\n"
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(fmt.Sprintf(
		`[{"id": 1, "s": {%s}, "tail": 3}, {"id": 2, "s": null, "tail": 5}, {"id": 3, "s": {%s}, "tail": 4}]`,
		strings.Join(row1, ", "), strings.Join(row3, ", "))))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	d, err := Create(t.Context(), st, root, schema, Batches(rec), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.ManifestKey(), names
}

// fixtureV4 is version 4 of the "default" fixture: 189 rows in two
// fragments, each with a deletion file.
const fixtureV4 = "kv.lance/_versions/18446744073709551611.manifest"

// writeOplog writes a dataset shaped like the key-value layer's operation
// log (seq, op, key NOT NULL; value nullable) in two appends and returns
// the key of its latest manifest.
func writeOplog(t testing.TB, st store.Store, root string) string {
	t.Helper()
	ctx := t.Context()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "op", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "key", Type: arrow.BinaryTypes.Binary},
		{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	batch := func(seq uint64, keys ...string) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i, k := range keys {
			b.Field(0).(*array.Uint64Builder).Append(seq + uint64(i))
			b.Field(2).(*array.BinaryBuilder).Append([]byte(k))
			if i%3 == 2 {
				b.Field(1).(*array.Uint8Builder).Append(1) // a delete: no value
				b.Field(3).AppendNull()
			} else {
				b.Field(1).(*array.Uint8Builder).Append(0)
				b.Field(3).(*array.BinaryBuilder).Append([]byte("v-" + k))
			}
		}
		return b.NewRecordBatch()
	}
	d, err := Create(ctx, st, root, schema, Batches(batch(1, "k1", "k2", "k3")), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Append(ctx, Batches(batch(4, "k1", "k4", "k2")), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return d.ManifestKey()
}

// sweepManifest is the byte sweep of TestManifestByteFlips over the
// manifest at key of version v (0: the latest) of the dataset at root,
// which has rows rows and the names names (tableText.names).
func sweepManifest(t *testing.T, st store.Store, root, key string, v uint64, rows int, names string) {
	ctx := t.Context()
	orig, err := store.ReadAll(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderVersion(ctx, st, root, v)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(want.rows, "\n"); n != rows || want.names != names {
		t.Fatalf("the dataset reads as %d rows of\n%s", n, want.names)
	}
	var caught, same, renamed int
	for i := range orig {
		for _, mask := range []byte{0xff, 0x01, 0x80} {
			b := bytes.Clone(orig)
			b[i] ^= mask
			if err := st.Put(ctx, key, b); err != nil {
				t.Fatal(err)
			}
			got, err := renderVersion(ctx, st, root, v)
			switch {
			case err != nil && !isTyped(err):
				t.Errorf("byte %d ^ %#x: untyped error %v", i, mask, err)
			case err != nil:
				caught++
			case got.types != want.types:
				t.Errorf("byte %d ^ %#x: no error, but the column types differ:\n%s", i, mask, firstDiff(want.types, got.types))
			case got.rows != want.rows:
				t.Errorf("byte %d ^ %#x: no error, but the rows differ:\n%s", i, mask, firstDiff(want.rows, got.rows))
			case got.names != want.names:
				renamed++
			default:
				same++
			}
		}
	}
	if err := st.Put(ctx, key, orig); err != nil {
		t.Fatal(err)
	}
	t.Logf("of %d flips: %d failed with a typed error, %d read the original table, %d renamed a column",
		3*len(orig), caught, same, renamed)
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n want %.300s\n got  %.300s", i+1, a, b)
		}
	}
	return "(equal)"
}

// TestReaderChecks damages one thing at a time in a decoded fixture
// manifest, writes it back and reads the table: each damage that would
// change what is read fails as ErrCorrupt with a message naming the file
// at fault and the inconsistency.
func TestReaderChecks(t *testing.T) {
	const v4 = "kv.lance/_versions/18446744073709551611.manifest" // version 4: a deletion file
	file := func(m *tablepb.Manifest) *tablepb.DataFile { return m.Fragments[0].Files[0] }
	for _, tc := range []struct {
		name     string
		key      string // the manifest to damage (default: the latest)
		damage   func(m *tablepb.Manifest)
		inError  []string
		dataFile bool   // the error names the data file rather than the manifest
		names    string // the error names this file instead
	}{
		{name: "no column indices", damage: func(m *tablepb.Manifest) { file(m).ColumnIndices = nil },
			inError: []string{"4 field ids but 0 column indices"}},
		{name: "field id twice", damage: func(m *tablepb.Manifest) { file(m).Fields = []int32{0, 1, 2, 2} },
			inError: []string{"field id 2 listed twice"}},
		{name: "negative field id", damage: func(m *tablepb.Manifest) { file(m).Fields = []int32{0, 1, -1, 3} },
			inError: []string{"field id -1"}},
		{name: "column index twice", damage: func(m *tablepb.Manifest) { file(m).ColumnIndices = []int32{0, 1, 3, 3} },
			inError: []string{"column index 3 listed twice"}},
		{name: "column index past the file", damage: func(m *tablepb.Manifest) { file(m).ColumnIndices = []int32{0, 1, 2, 9} },
			inError: []string{"column index 9, the file has 4 columns"}, dataFile: true},
		{name: "fewer columns than the file", damage: func(m *tablepb.Manifest) {
			file(m).Fields, file(m).ColumnIndices = []int32{0, 1, 3}, []int32{0, 1, 3}
			m.Fields[2].Nullable = true // so that "key" may legitimately be missing
		}, inError: []string{"gives the file 3 columns, the file has 4"}, dataFile: true},
		{name: "field id the file does not have", damage: func(m *tablepb.Manifest) { file(m).Fields = []int32{0, 1, 2, 7} },
			inError: []string{"lists field id 7, which the file's schema does not have"}, dataFile: true},
		{name: "type differs from the file", damage: func(m *tablepb.Manifest) { m.Fields[1].LogicalType = "int8" },
			inError: []string{`field id 1 ("op") has type "int8"`, `but "uint8" in the file`}, dataFile: true},
		{name: "key and value swapped (one type)", damage: func(m *tablepb.Manifest) { file(m).Fields = []int32{0, 1, 3, 2} },
			inError: []string{`column "key" is not nullable but row 2 is null`}, dataFile: true},
		{name: "non-nullable column in no data file", damage: func(m *tablepb.Manifest) {
			m.Fields = append(m.Fields, &filepb.Field{Name: "extra", Id: 4, ParentId: -1, LogicalType: "int32"})
		}, inError: []string{`fragment 2: no data file holds the non-nullable column "extra"`}},
		{name: "row count", damage: func(m *tablepb.Manifest) { m.Fragments[0].PhysicalRows = 190 },
			inError: []string{"data file has 189 rows, fragment 2 has 190"}, dataFile: true},
		{name: "file size", damage: func(m *tablepb.Manifest) { file(m).FileSizeBytes += 64 },
			inError: []string{"shorter than the 7049 bytes recorded for it"}, dataFile: true},
		{name: "max_fragment_id", damage: func(m *tablepb.Manifest) { m.MaxFragmentId = proto.Uint32(1) },
			inError: []string{"fragment id 2 is above max_fragment_id 1"}},
		{name: "child of a primitive", damage: func(m *tablepb.Manifest) { m.Fields[1].ParentId = 0 },
			inError: []string{`field "seq" (id 0) of type "uint64" has 1 children`}},
		{name: "two columns of one name", damage: func(m *tablepb.Manifest) { m.Fields[1].Name = "seq" },
			inError: []string{`fields 0 and 1 are both named "seq"`}},
		{name: "parent id below -1", damage: func(m *tablepb.Manifest) { m.Fields[1].ParentId = -2 },
			inError: []string{`field "op" (id 1) names unknown parent -2`}},
		{name: "format version", damage: func(m *tablepb.Manifest) { file(m).FileMinorVersion = 0 },
			inError: []string{"says format 2.0, the file says 2.1"}, dataFile: true},
		{name: "negative schema id", damage: func(m *tablepb.Manifest) { m.Fields[3].Id = -5 },
			inError: []string{`field "value" has negative id -5`}},
		{name: "physical rows not recorded", damage: func(m *tablepb.Manifest) { m.Fragments[0].PhysicalRows = 0 },
			inError: []string{"fragment 2 records no physical rows, but its 2.1 data file", "has 189"}},
		{name: "physical rows not recorded, deletion file", key: v4, damage: func(m *tablepb.Manifest) { m.Fragments[1].PhysicalRows = 0 },
			inError: []string{"fragment 1 records no physical rows, but its 2.1 data file", "has 100"}},
		{name: "deleted row count", key: v4, damage: func(m *tablepb.Manifest) { m.Fragments[0].DeletionFile.NumDeletedRows++ },
			inError: []string{"deletion file holds 10 rows", "says 11"}, names: "kv.lance/_deletions/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st := loadFixture(t, "default")
			key := cmp.Or(tc.key, fixtureManifest)
			var version uint64
			if tc.key != "" {
				version = 4
			}
			if _, err := renderVersion(ctx, st, "kv.lance", version); err != nil {
				t.Fatalf("undamaged: %v", err)
			}
			b, err := store.ReadAll(ctx, st, key)
			if err != nil {
				t.Fatal(err)
			}
			mf, err := decodeManifest(key, int64(len(b)), b, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := mf.m.CloneVT()
			m.TransactionSection = nil
			tc.damage(m)
			if err := st.Put(ctx, key, mustEncodeManifest(m, nil)); err != nil {
				t.Fatal(err)
			}
			_, err = renderVersion(ctx, st, "kv.lance", version)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, lancefile.ErrCorrupt) {
				t.Fatalf("got %v, want a corruption error", err)
			}
			names := key
			if tc.dataFile {
				names = "kv.lance/data/"
			}
			if tc.names != "" {
				names = tc.names
			}
			for _, s := range append(tc.inError, names) {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestKnownFieldOfAnotherWireType: a known field number with another wire
// type (a flipped bit in a tag's low bits) fails to decode, as corruption.
func TestKnownFieldOfAnotherWireType(t *testing.T) {
	f := &filepb.Field{Name: "op", Id: 1, ParentId: -1, LogicalType: "uint8"}
	b, err := f.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	var got filepb.Field
	if err := got.UnmarshalVT(protowire.AppendFixed32(protowire.AppendTag(b, 3, protowire.Fixed32Type), 1)); err == nil {
		t.Fatalf("field id as fixed32 decoded: %v", &got)
	}
	// In a manifest file, the same damage is corruption naming the file.
	m := &tablepb.Manifest{Fields: []*filepb.Field{f}, Version: 1}
	mb, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	file := frameManifest(protowire.AppendFixed64(protowire.AppendTag(mb, 3, protowire.Fixed64Type), 2))
	if _, err := decodeManifest("m.manifest", int64(len(file)), file, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "m.manifest") {
		t.Fatalf("version as fixed64: %v, want ErrCorrupt naming m.manifest", err)
	}
}

// frameManifest wraps manifest protobuf bytes in a manifest file: length
// prefix, the bytes, and the footer pointing at them.
func frameManifest(pb []byte) []byte {
	file := binary.LittleEndian.AppendUint32(nil, uint32(len(pb)))
	file = append(file, pb...)
	file = binary.LittleEndian.AppendUint64(file, 0)
	return append(file, 0, 0, 2, 0, 'L', 'A', 'N', 'C')
}

// TestFirstRepeat covers both ways firstRepeat looks for a repeated id or
// column index: short lists directly, long ones sorted. Negative values
// (tombstones, "no column") may repeat.
func TestFirstRepeat(t *testing.T) {
	long := func(extra ...int32) []int32 {
		var xs []int32
		for i := int32(0); i < 40; i++ {
			xs = append(xs, 40-i)
		}
		return append(xs, extra...)
	}
	for _, tc := range []struct {
		xs   []int32
		want int32
		ok   bool
	}{
		{[]int32{0, 1, 2, 3}, 0, false},
		{[]int32{0, -2, 2, -2, -1, -1}, 0, false},
		{[]int32{0, 1, 2, 1}, 1, true},
		{long(), 0, false},
		{long(-2, -2, -1, -1), 0, false},
		{long(17), 17, true},
	} {
		if got, ok := firstRepeat(tc.xs); got != tc.want || ok != tc.ok {
			t.Errorf("firstRepeat(%v) = %d, %v; want %d, %v", tc.xs, got, ok, tc.want, tc.ok)
		}
	}
}
