package arrowstream_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/arrowstream"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "fsl", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	), Nullable: true},
	{Name: "nul", Type: arrow.Null, Nullable: true},
}, nil)

// randomBatch fills every column of testSchema with n rows, about a fifth
// of them null where the column allows it.
func randomBatch(rng *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	null := func() bool { return rng.IntN(5) == 0 }
	for r := 0; r < n; r++ {
		b.Field(0).(*array.Int64Builder).Append(rng.Int64())
		for c := 1; c < len(testSchema.Fields()); c++ {
			fb := b.Field(c)
			if null() || c == 12 {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Uint8Builder:
				fb.Append(uint8(rng.IntN(256)))
			case *array.Float64Builder:
				fb.Append(rng.NormFloat64())
			case *array.BooleanBuilder:
				fb.Append(rng.IntN(2) == 0)
			case *array.StringBuilder:
				fb.Append(fmt.Sprint("s", rng.IntN(1000)))
			case *array.LargeStringBuilder:
				fb.Append(fmt.Sprint("large", rng.IntN(1000)))
			case *array.BinaryBuilder:
				fb.Append([]byte{byte(rng.IntN(256)), 0, 1})
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(rng.Int64N(1 << 50)))
			case *array.FixedSizeBinaryBuilder:
				fb.Append([]byte{1, 2, byte(r)})
			case *array.ListBuilder:
				fb.Append(true)
				for k := rng.IntN(4); k > 0; k-- {
					fb.ValueBuilder().(*array.Int32Builder).Append(rng.Int32())
				}
			case *array.FixedSizeListBuilder:
				fb.Append(true)
				fb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{rng.Float32(), rng.Float32()}, nil)
			case *array.StructBuilder:
				fb.Append(true)
				if null() {
					fb.FieldBuilder(0).AppendNull()
				} else {
					fb.FieldBuilder(0).(*array.Int16Builder).Append(int16(r))
				}
				lb := fb.FieldBuilder(1).(*array.ListBuilder)
				lb.Append(true)
				for k := rng.IntN(3); k > 0; k-- {
					lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint(k))
				}
			default:
				panic(fmt.Sprintf("column %d: %T", c, fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestStreamReadsBack: what the writer writes, arrow-go's IPC reader reads
// back equal, for every type it takes, whole and sliced batches, nulls and
// nested lists and structs; a stream without batches holds the schema.
func TestStreamReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 30 {
		var want []arrow.RecordBatch
		for k := rng.IntN(4); k >= 0; k-- {
			rec := randomBatch(rng, 1+rng.IntN(300))
			defer rec.Release()
			switch rng.IntN(3) {
			case 0:
				// A slice from 0 keeps offset 0 but leaves its null
				// count unknown until counted.
				rec = rec.NewSlice(0, rng.Int64N(rec.NumRows()+1))
				defer rec.Release()
			case 1:
				lo := rng.Int64N(rec.NumRows())
				hi := lo + rng.Int64N(rec.NumRows()-lo+1)
				rec = rec.NewSlice(lo, hi)
				defer rec.Release()
			}
			want = append(want, rec)
		}
		if round == 0 {
			want = nil
		}
		var buf bytes.Buffer
		w := arrowstream.NewWriter(&buf, testSchema)
		for _, rec := range want {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rd, err := ipc.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !rd.Schema().Equal(testSchema) {
			t.Fatalf("schema %v", rd.Schema())
		}
		i := 0
		for rd.Next() {
			if i >= len(want) {
				t.Fatalf("round %d: more batches than written", round)
			}
			got := rd.RecordBatch()
			// Every field node carries the exact null count (readers such
			// as apache-arrow's JS one take a negative count for none):
			// checked before anything counts the nulls of what was read.
			for c, col := range got.Columns() {
				if n := col.Data().NullN(); n != want[i].Column(c).NullN() {
					t.Fatalf("round %d batch %d column %d: null count %d in the stream, want %d", round, i, c, n, want[i].Column(c).NullN())
				}
			}
			if !array.RecordEqual(got, want[i]) {
				t.Fatalf("round %d batch %d differs:\n got %v\nwant %v", round, i, got, want[i])
			}
			i++
		}
		if err := rd.Err(); err != nil || i != len(want) {
			t.Fatalf("round %d: %d of %d batches, %v", round, i, len(want), err)
		}
		rd.Release()
	}
}

// TestRefusals: a batch of another schema, or of a type the writer does
// not encode, is refused before anything is written.
func TestRefusals(t *testing.T) {
	var buf bytes.Buffer
	w := arrowstream.NewWriter(&buf, testSchema)
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int8}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, other)
	rec := b.NewRecordBatch()
	if err := w.Write(rec); err == nil {
		t.Error("a batch of another schema was written")
	}
	dictSchema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}}}, nil)
	db := array.NewRecordBuilder(memory.DefaultAllocator, dictSchema)
	db.Field(0).(*array.BinaryDictionaryBuilder).AppendString("a")
	drec := db.NewRecordBatch()
	if err := arrowstream.NewWriter(&buf, dictSchema).Write(drec); !errors.Is(err, arrowstream.ErrUnsupportedType) {
		t.Errorf("dictionary column: %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes written for refused batches", buf.Len())
	}
}
