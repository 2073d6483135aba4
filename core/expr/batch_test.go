package expr

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testSchema has a column of every supported type, a struct and odd names.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "lbin", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
	{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "+05:30"}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "meta", Type: arrow.StructOf(
		arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "my col", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "Upper", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "lst", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

// Value pools. Rows draw from them so that equality comparisons hit.
var (
	poolInts    = []int64{0, 1, -1, 2, 7, 100, 127, -128, 255, 300}
	poolFloats  = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, -2.5, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(), float64(float32(0.1))}
	poolStrings = []string{"", "a", "b", "ab", "B", "it's", "é", "\x00", "zz"}
	poolSecs    = []int64{0, 1, -1, 86400, 1704067200, 1704067200 + 19800, 1704067200 - 19800, 1704153600, -86400 * 365}
	poolFracs   = []int64{0, 0, 500_000_000, 1, 999_999_999, 123_456_000}
	poolDays    = []int32{0, 1, -1, 19723, 19724, 19722, math.MaxInt32, math.MinInt32}
)

// value is one generated cell: nil for null.
type rowVals []any

// genRows makes n rows of random values; pNull is the chance of a null.
func genRows(r *rand.Rand, n int, pNull float64) []rowVals {
	rows := make([]rowVals, n)
	for i := range rows {
		row := make(rowVals, len(testSchema.Fields()))
		for c, f := range testSchema.Fields() {
			if r.Float64() < pNull {
				continue
			}
			switch f.Type.ID() {
			case arrow.BOOL:
				row[c] = r.IntN(2) == 1
			case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
				row[c] = poolInts[r.IntN(len(poolInts))]
				if r.IntN(8) == 0 {
					row[c] = int64(r.Uint64())
				}
			case arrow.FLOAT32, arrow.FLOAT64:
				row[c] = poolFloats[r.IntN(len(poolFloats))]
			case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
				row[c] = poolStrings[r.IntN(len(poolStrings))]
			case arrow.TIMESTAMP:
				row[c] = time.Unix(poolSecs[r.IntN(len(poolSecs))], poolFracs[r.IntN(len(poolFracs))])
			case arrow.DATE32:
				row[c] = poolDays[r.IntN(len(poolDays))]
			case arrow.STRUCT:
				kind := any(poolStrings[r.IntN(len(poolStrings))])
				if r.IntN(4) == 0 {
					kind = nil
				}
				row[c] = [2]any{kind, poolInts[r.IntN(len(poolInts))]}
			case arrow.LIST:
				row[c] = []int32{1}
			}
		}
		rows[i] = row
	}
	return rows
}

// buildBatch turns rows into a record batch. Values are stored the way the
// column type stores them (integers wrap, timestamps are truncated to the
// unit), and rows is updated to hold exactly what was stored.
func buildBatch(rows []rowVals) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer bld.Release()
	for _, row := range rows {
		for c, f := range testSchema.Fields() {
			fb := bld.Field(c)
			v := row[c]
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch b := fb.(type) {
			case *array.BooleanBuilder:
				b.Append(v.(bool))
			case *array.Int8Builder:
				b.Append(int8(v.(int64)))
				row[c] = int64(int8(v.(int64)))
			case *array.Int16Builder:
				b.Append(int16(v.(int64)))
				row[c] = int64(int16(v.(int64)))
			case *array.Int32Builder:
				b.Append(int32(v.(int64)))
				row[c] = int64(int32(v.(int64)))
			case *array.Int64Builder:
				b.Append(v.(int64))
			case *array.Uint8Builder:
				b.Append(uint8(v.(int64)))
				row[c] = uint64(uint8(v.(int64)))
			case *array.Uint16Builder:
				b.Append(uint16(v.(int64)))
				row[c] = uint64(uint16(v.(int64)))
			case *array.Uint32Builder:
				b.Append(uint32(v.(int64)))
				row[c] = uint64(uint32(v.(int64)))
			case *array.Uint64Builder:
				b.Append(uint64(v.(int64)))
				row[c] = uint64(v.(int64))
			case *array.Float32Builder:
				b.Append(float32(v.(float64)))
				row[c] = float64(float32(v.(float64)))
			case *array.Float64Builder:
				b.Append(v.(float64))
			case *array.StringBuilder:
				b.Append(v.(string))
			case *array.LargeStringBuilder:
				b.Append(v.(string))
			case *array.BinaryBuilder:
				b.Append([]byte(v.(string)))
			case *array.TimestampBuilder:
				u := f.Type.(*arrow.TimestampType).Unit
				tm := v.(time.Time)
				per := ticksPerSecond(u)
				ticks := tm.Unix()*per + int64(tm.Nanosecond())/(1_000_000_000/per)
				b.Append(arrow.Timestamp(ticks))
				row[c] = time.Unix(tm.Unix(), int64(tm.Nanosecond())/(1_000_000_000/per)*(1_000_000_000/per))
			case *array.Date32Builder:
				b.Append(arrow.Date32(v.(int32)))
			case *array.StructBuilder:
				b.Append(true)
				sv := v.([2]any)
				kb := b.FieldBuilder(0).(*array.StringBuilder)
				if sv[0] == nil {
					kb.AppendNull()
				} else {
					kb.Append(sv[0].(string))
				}
				b.FieldBuilder(1).(*array.Int32Builder).Append(int32(sv[1].(int64)))
				row[c] = [2]any{sv[0], int64(int32(sv[1].(int64)))}
			case *array.ListBuilder:
				b.Append(true)
				b.ValueBuilder().(*array.Int32Builder).Append(1)
			default:
				panic("unhandled builder")
			}
		}
	}
	return bld.NewRecordBatch()
}
