package lancefile

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNullArray checks NullArray against arrow-go's MakeArrayOfNull for every
// type a Lance schema resolves to, and that other types are refused by name.
func TestNullArray(t *testing.T) {
	item := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	types := []arrow.DataType{
		arrow.Null, arrow.FixedWidthTypes.Boolean,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
		item, arrow.ListOf(item), arrow.LargeListOf(arrow.BinaryTypes.String),
		arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32),
		arrow.FixedWidthTypes.Float16, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Time32ms,
		arrow.FixedWidthTypes.Time64ns, arrow.FixedWidthTypes.Duration_us, arrow.FixedWidthTypes.MonthDayNanoInterval,
		&arrow.Decimal128Type{Precision: 20, Scale: 2}, &arrow.Decimal256Type{Precision: 40, Scale: 2},
		&arrow.FixedSizeBinaryType{ByteWidth: 5}, arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
		arrow.StructOf(arrow.Field{Name: "v", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true}),
	}
	for _, dt := range types {
		for _, n := range []int{0, 1, 9, 64} {
			got, err := NullArray(dt, n)
			if err != nil {
				t.Fatalf("%s × %d: %v", dt, n, err)
			}
			want := array.MakeArrayOfNull(memory.DefaultAllocator, dt, n)
			if !arrow.TypeEqual(got.DataType(), dt) || got.Len() != n || got.NullN() != n || !array.Equal(got, want) {
				t.Errorf("%s × %d: got %v (type %s, %d nulls), want %v", dt, n, got, got.DataType(), got.NullN(), want)
			}
			got.Release()
			want.Release()
		}
	}
	for _, dt := range []arrow.DataType{
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		arrow.StructOf(arrow.Field{Name: "u", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int8}}, []arrow.UnionTypeCode{0})}),
		arrow.ListOf(arrow.BinaryTypes.StringView),
		arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String),
	} {
		_, err := NullArray(dt, 3)
		if !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("%s: err = %v, want ErrUnsupportedType", dt, err)
		}
	}
}
