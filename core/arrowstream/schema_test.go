package arrowstream_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/endian"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/arrowstream"
)

// leafTypes are the types without children the writer takes.
var leafTypes = []arrow.DataType{
	arrow.Null, arrow.FixedWidthTypes.Boolean,
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64,
	&arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"},
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, &arrow.TimestampType{Unit: arrow.Nanosecond},
	arrow.FixedWidthTypes.Time32s, arrow.FixedWidthTypes.Time32ms, arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Time64ns,
	arrow.FixedWidthTypes.Duration_s, arrow.FixedWidthTypes.Duration_ms, arrow.FixedWidthTypes.Duration_us, arrow.FixedWidthTypes.Duration_ns,
	arrow.FixedWidthTypes.MonthInterval, arrow.FixedWidthTypes.DayTimeInterval, arrow.FixedWidthTypes.MonthDayNanoInterval,
	&arrow.Decimal32Type{Precision: 9, Scale: 2}, &arrow.Decimal64Type{Precision: 18, Scale: 0},
	&arrow.Decimal128Type{Precision: 38, Scale: 10}, &arrow.Decimal256Type{Precision: 76, Scale: -3},
	&arrow.FixedSizeBinaryType{ByteWidth: 1}, &arrow.FixedSizeBinaryType{ByteWidth: 16},
	arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary,
}

// arrowGoSchema is the framed Schema message arrow-go writes for s.
func arrowGoSchema(t *testing.T, s *arrow.Schema) []byte {
	p := ipc.GetSchemaPayload(s, memory.DefaultAllocator)
	defer p.Release()
	var buf bytes.Buffer
	if _, err := p.WritePayload(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// streamSchema is the framed Schema message at the start of the stream,
// the end-of-stream marker cut off the stream of no batches.
func streamSchema(t *testing.T, s *arrow.Schema) []byte {
	var buf bytes.Buffer
	if err := arrowstream.NewWriter(&buf, s).Close(); err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	return buf.Bytes()[:buf.Len()-8]
}

// TestSchemaBytes: the Schema message is byte for byte the one arrow-go's
// ipc.GetSchemaPayload writes, for every type the writer takes alone,
// nullable or not, and nested, with field and schema metadata, unicode and
// empty names, no fields, big-endian schemas.
func TestSchemaBytes(t *testing.T) {
	md := arrow.NewMetadata([]string{"k", "ключ", ""}, []string{"v", "значение 🦀", ""})
	var all []arrow.Field
	var schemas []*arrow.Schema
	for i, dt := range leafTypes {
		for _, nullable := range []bool{false, true} {
			f := arrow.Field{Name: fmt.Sprint("f", i), Type: dt, Nullable: nullable}
			schemas = append(schemas, arrow.NewSchema([]arrow.Field{f}, nil))
			all = append(all, f)
		}
	}
	entries := arrow.MapOfWithMetadata(arrow.BinaryTypes.String, md, arrow.StructOf(
		arrow.Field{Name: "lst", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int16)},
		arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "+05:30"}, Nullable: true, Metadata: md},
	), arrow.Metadata{})
	sorted := arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.Binary)
	sorted.KeysSorted = true
	nested := []arrow.Field{
		{Name: "lists of structs of maps", Type: arrow.ListOf(arrow.StructOf(
			arrow.Field{Name: "m", Type: entries, Nullable: true},
			arrow.Field{Name: "sorted", Type: sorted},
			arrow.Field{Name: "fsl", Type: arrow.FixedSizeListOfField(3, arrow.Field{Name: "item", Type: &arrow.Decimal128Type{Precision: 5, Scale: 1}, Metadata: md})},
		)), Nullable: true, Metadata: md},
		{Name: "empty struct", Type: arrow.StructOf()},
		{Name: "", Type: arrow.LargeListOfField(arrow.Field{Name: "名前", Type: arrow.ListOfNonNullable(arrow.Null)})},
		{Name: "🦀", Type: arrow.FixedSizeListOf(1, arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.StructOf()))},
	}
	schemas = append(schemas,
		arrow.NewSchema(nil, nil),
		arrow.NewSchema(nil, &md),
		arrow.NewSchema(all, nil),
		arrow.NewSchema(all, &md),
		arrow.NewSchema(nested, nil),
		arrow.NewSchema(nested, &md),
		arrow.NewSchema(append(nested, all...), &md),
		arrow.NewSchemaWithEndian(nested, &md, endian.BigEndian),
		arrow.NewSchema([]arrow.Field{{Name: "with", Type: arrow.BinaryTypes.String, Metadata: md}, {Name: "without", Type: arrow.BinaryTypes.String}}, nil),
	)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		schemas = append(schemas, randomSchema(rng))
	}
	for _, s := range schemas {
		if got, want := streamSchema(t, s), arrowGoSchema(t, s); !bytes.Equal(got, want) {
			t.Errorf("schema %v:\n got %x\nwant %x", s, got, want)
		}
	}
}

// TestUnsupportedSchemas: a schema holding a type the writer does not
// encode, at the top or nested, is ErrUnsupportedType naming the type, from
// Close as from every call after, and nothing is written.
func TestUnsupportedSchemas(t *testing.T) {
	union := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int8}}
	for _, dt := range []arrow.DataType{
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String},
		arrow.SparseUnionOf(union, []arrow.UnionTypeCode{3}),
		arrow.DenseUnionOf(union, []arrow.UnionTypeCode{0}),
		arrow.BinaryTypes.StringView, arrow.BinaryTypes.BinaryView,
		arrow.ListViewOf(arrow.PrimitiveTypes.Int8), arrow.LargeListViewOf(arrow.PrimitiveTypes.Int8),
		arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String),
		&testExtension{arrow.ExtensionBase{Storage: arrow.PrimitiveTypes.Int32}},
	} {
		for _, outer := range []arrow.DataType{
			dt,
			arrow.ListOf(dt),
			arrow.StructOf(arrow.Field{Name: "ok", Type: arrow.PrimitiveTypes.Int8}, arrow.Field{Name: "bad", Type: dt}),
			arrow.MapOf(arrow.BinaryTypes.String, arrow.FixedSizeListOf(2, dt)),
		} {
			s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.BinaryTypes.String}, {Name: "y", Type: outer}}, nil)
			var buf bytes.Buffer
			w := arrowstream.NewWriter(&buf, s)
			for range 2 {
				err := w.Close()
				if !errors.Is(err, arrowstream.ErrUnsupportedType) || !strings.Contains(err.Error(), dt.String()) {
					t.Errorf("%v: %v", outer, err)
				}
			}
			if buf.Len() != 0 {
				t.Errorf("%v: %d bytes written", outer, buf.Len())
			}
		}
	}
}

// testExtension is an extension type over any storage, for the refusals.
type testExtension struct{ arrow.ExtensionBase }

// testExtensionArray is testExtension's array.
type testExtensionArray struct{ array.ExtensionArrayBase }

func (*testExtension) ArrayType() reflect.Type { return reflect.TypeOf(testExtensionArray{}) }
func (*testExtension) ExtensionName() string   { return "kv0.test" }
func (*testExtension) Serialize() string       { return "" }
func (e *testExtension) ExtensionEquals(o arrow.ExtensionType) bool {
	return o.ExtensionName() == e.ExtensionName()
}
func (e *testExtension) Deserialize(arrow.DataType, string) (arrow.ExtensionType, error) {
	return e, nil
}

// TestRandomStreams: streams of random nested schemas (depth up to 4, every
// type the writer takes, random nullability and metadata) and random
// batches, none to several, whole and sliced, read back by arrow-go's IPC
// reader equal to what was written.
func TestRandomStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		s := randomSchema(rng)
		var want []arrow.RecordBatch
		for k := rng.IntN(4); k > 0; k-- {
			rec := randomRecord(rng, s, rng.IntN(40))
			defer rec.Release()
			if n := rec.NumRows(); n > 0 && rng.IntN(3) == 0 {
				lo := rng.Int64N(n)
				rec = rec.NewSlice(lo, lo+rng.Int64N(n-lo+1))
				defer rec.Release()
			}
			want = append(want, rec)
		}
		var buf bytes.Buffer
		w := arrowstream.NewWriter(&buf, s)
		for _, rec := range want {
			if err := w.Write(rec); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		rd, err := ipc.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !rd.Schema().Equal(s) || !rd.Schema().Metadata().Equal(s.Metadata()) {
			t.Fatalf("round %d: schema\n got %v\nwant %v", round, rd.Schema(), s)
		}
		i := 0
		for ; rd.Next(); i++ {
			if i >= len(want) {
				t.Fatalf("round %d: more batches than written", round)
			}
			got := rd.RecordBatch()
			if got.NumRows() != want[i].NumRows() {
				t.Fatalf("round %d batch %d: %d rows, want %d", round, i, got.NumRows(), want[i].NumRows())
			}
			for c := range got.Columns() {
				if !array.Equal(got.Column(c), want[i].Column(c)) {
					t.Fatalf("round %d batch %d column %d (%s) differs:\n got %v\nwant %v", round, i, c, s.Field(c).Type, got.Column(c), want[i].Column(c))
				}
			}
		}
		if err := rd.Err(); err != nil || i != len(want) {
			t.Fatalf("round %d: %d of %d batches, %v", round, i, len(want), err)
		}
		rd.Release()
	}
}

// randomSchema is a schema of up to 5 random fields, sometimes with
// metadata.
func randomSchema(rng *rand.Rand) *arrow.Schema {
	fields := make([]arrow.Field, rng.IntN(6))
	for i := range fields {
		fields[i] = randomField(rng, fmt.Sprint("c", i), 1)
	}
	var md *arrow.Metadata
	if rng.IntN(3) == 0 {
		m := randomMetadata(rng)
		md = &m
	}
	return arrow.NewSchema(fields, md)
}

// randomMetadata is zero to two key/value pairs.
func randomMetadata(rng *rand.Rand) arrow.Metadata {
	var keys, vals []string
	for i := rng.IntN(3); i > 0; i-- {
		keys = append(keys, fmt.Sprint("κ", rng.IntN(100)))
		vals = append(vals, strings.Repeat("v", rng.IntN(9)))
	}
	return arrow.NewMetadata(keys, vals)
}

// randomField is a field named name of a random type nested depth levels
// deep at most 4.
func randomField(rng *rand.Rand, name string, depth int) arrow.Field {
	f := arrow.Field{Name: name, Type: randomType(rng, depth), Nullable: rng.IntN(2) == 0}
	if rng.IntN(4) == 0 {
		f.Metadata = randomMetadata(rng)
	}
	return f
}

// randomType is a leaf type or, above depth 4, as often a list, large
// list, fixed-size list, map or struct of random fields.
func randomType(rng *rand.Rand, depth int) arrow.DataType {
	if depth >= 4 || rng.IntN(2) == 0 {
		return leafTypes[rng.IntN(len(leafTypes))]
	}
	switch rng.IntN(5) {
	case 0:
		return arrow.ListOfField(randomField(rng, "item", depth+1))
	case 1:
		return arrow.LargeListOfField(randomField(rng, "item", depth+1))
	case 2:
		return arrow.FixedSizeListOfField(1+rng.Int32N(3), randomField(rng, "item", depth+1))
	case 3:
		key := randomField(rng, "key", depth+2)
		for key.Type.ID() == arrow.NULL {
			key = randomField(rng, "key", depth+2)
		}
		key.Nullable = false
		item := randomField(rng, "value", depth+2)
		item.Nullable = item.Nullable || item.Type.ID() == arrow.NULL // arrow-go's map builder checks
		m := arrow.MapOfFields(key, item)
		m.KeysSorted = rng.IntN(2) == 0
		return m
	default:
		fields := make([]arrow.Field, rng.IntN(4))
		for i := range fields {
			fields[i] = randomField(rng, fmt.Sprint("s", i), depth+1)
		}
		return arrow.StructOf(fields...)
	}
}

// randomRecord is a batch of n random rows of s.
func randomRecord(rng *rand.Rand, s *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i, f := range s.Fields() {
		for range n {
			appendRandom(rng, b.Field(i), f.Nullable)
		}
	}
	return b.NewRecordBatch()
}

// appendRandom appends a random value to b, a null now and then where
// nullable.
func appendRandom(rng *rand.Rand, b array.Builder, nullable bool) {
	if _, ok := b.(*array.NullBuilder); ok || nullable && rng.IntN(5) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.Int8Builder:
		b.Append(int8(rng.Uint32()))
	case *array.Int16Builder:
		b.Append(int16(rng.Uint32()))
	case *array.Int32Builder:
		b.Append(rng.Int32())
	case *array.Int64Builder:
		b.Append(int64(rng.Uint64()))
	case *array.Uint8Builder:
		b.Append(uint8(rng.Uint32()))
	case *array.Uint16Builder:
		b.Append(uint16(rng.Uint32()))
	case *array.Uint32Builder:
		b.Append(rng.Uint32())
	case *array.Uint64Builder:
		b.Append(rng.Uint64())
	case *array.Float16Builder:
		b.Append(float16.New(float32(rng.NormFloat64())))
	case *array.Float32Builder:
		b.Append(float32(rng.NormFloat64()))
	case *array.Float64Builder:
		b.Append(rng.NormFloat64())
	case *array.Date32Builder:
		b.Append(arrow.Date32(rng.Int32()))
	case *array.Date64Builder:
		b.Append(arrow.Date64(rng.Int64()))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(rng.Int64()))
	case *array.Time32Builder:
		b.Append(arrow.Time32(rng.Int32N(86400)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(rng.Int64N(86400e9)))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(rng.Int64()))
	case *array.MonthIntervalBuilder:
		b.Append(arrow.MonthInterval(rng.Int32()))
	case *array.DayTimeIntervalBuilder:
		b.Append(arrow.DayTimeInterval{Days: rng.Int32(), Milliseconds: rng.Int32()})
	case *array.MonthDayNanoIntervalBuilder:
		b.Append(arrow.MonthDayNanoInterval{Months: rng.Int32(), Days: rng.Int32(), Nanoseconds: rng.Int64()})
	case *array.Decimal32Builder:
		b.Append(decimal.Decimal32(rng.Int32N(1e9)))
	case *array.Decimal64Builder:
		b.Append(decimal.Decimal64(rng.Int64N(1e18)))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(rng.Int64()))
	case *array.Decimal256Builder:
		b.Append(decimal256.FromI64(rng.Int64()))
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, b.Type().(*arrow.FixedSizeBinaryType).ByteWidth)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		b.Append(v)
	case *array.StringBuilder:
		b.Append(strings.Repeat("ü", rng.IntN(4)))
	case *array.LargeStringBuilder:
		b.Append(strings.Repeat("x", rng.IntN(4)))
	case *array.BinaryBuilder: // binary and large binary
		b.Append(bytes.Repeat([]byte{byte(rng.Uint32())}, rng.IntN(4)))
	case *array.MapBuilder:
		b.Append(true)
		item := b.ValueBuilder().Type().(*arrow.StructType).Field(1).Nullable
		for k := rng.IntN(4); k > 0; k-- {
			appendRandom(rng, b.KeyBuilder(), false)
			appendRandom(rng, b.ItemBuilder(), item)
		}
	case *array.FixedSizeListBuilder:
		b.Append(true)
		t := b.Type().(*arrow.FixedSizeListType)
		for range t.Len() {
			appendRandom(rng, b.ValueBuilder(), t.ElemField().Nullable)
		}
	case array.ListLikeBuilder: // list and large list
		b.Append(true)
		elem := b.Type().(arrow.ListLikeType).ElemField().Nullable
		for k := rng.IntN(4); k > 0; k-- {
			appendRandom(rng, b.ValueBuilder(), elem)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i, f := range b.Type().(*arrow.StructType).Fields() {
			appendRandom(rng, b.FieldBuilder(i), f.Nullable)
		}
	default:
		panic(fmt.Sprintf("no random values for %T", b))
	}
}
