package lance

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/lancefile"
)

func TestDefaultBatchRows(t *testing.T) {
	f := func(dt arrow.DataType) *lancefile.Field { return &lancefile.Field{Type: dt} }
	for _, tc := range []struct {
		name   string
		fields []*lancefile.Field
		want   int
	}{
		{"metrics shape", []*lancefile.Field{f(arrow.PrimitiveTypes.Uint64), f(arrow.PrimitiveTypes.Int64),
			f(&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}), f(arrow.PrimitiveTypes.Float64)}, 64 << 10},
		{"a string column", []*lancefile.Field{f(arrow.PrimitiveTypes.Int64), f(arrow.BinaryTypes.String)}, DefaultBatchRows},
		{"a list column", []*lancefile.Field{f(arrow.ListOf(arrow.PrimitiveTypes.Int32))}, DefaultBatchRows},
		{"wide vectors", []*lancefile.Field{f(arrow.FixedSizeListOf(1024, arrow.PrimitiveTypes.Float32))}, DefaultBatchRows},
		{"medium rows", []*lancefile.Field{f(arrow.FixedSizeListOf(64, arrow.PrimitiveTypes.Float32))}, (4 << 20) / 256},
		{"bools", []*lancefile.Field{f(arrow.FixedWidthTypes.Boolean)}, 64 << 10},
	} {
		if got := defaultBatchRows(tc.fields); got != tc.want {
			t.Errorf("%s: defaultBatchRows = %d, want %d", tc.name, got, tc.want)
		}
	}
}
