package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchBatch is a 64k-row batch of an int64, a float64, a string and a
// timestamp column, 10% nulls.
func benchBatch() arrow.RecordBatch {
	const n = 1 << 16
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(1, 1))
	valid := make([]bool, n)
	is, fs, ss, ts := make([]int64, n), make([]float64, n), make([]string, n), make([]arrow.Timestamp, n)
	for k := range valid {
		valid[k] = r.IntN(10) != 0
		is[k] = r.Int64N(1000)
		fs[k] = r.Float64() * 1000
		ss[k] = fmt.Sprintf("host-%03d", r.IntN(200))
		ts[k] = arrow.Timestamp(1704067200_000000 + r.Int64N(86400_000000))
	}
	b.Field(0).(*array.Int64Builder).AppendValues(is, valid)
	b.Field(1).(*array.Float64Builder).AppendValues(fs, valid)
	b.Field(2).(*array.StringBuilder).AppendValues(ss, valid)
	b.Field(3).(*array.TimestampBuilder).AppendValues(ts, valid)
	return b.NewRecordBatch()
}

func BenchmarkFilter(b *testing.B) {
	rec := benchBatch()
	defer rec.Release()
	for _, src := range []string{
		"i < 500",
		"f >= 250.5",
		"s = 'host-007'",
		"s < 'host-100'",
		"i IN (1, 5, 9, 200, 300, 400, 500, 600, 700, 800)",
		"ts >= TIMESTAMP '2024-01-01 12:00:00'",
		"i < 500 AND (s = 'host-007' OR f > 900) AND ts IS NOT NULL",
	} {
		b.Run(src, func(b *testing.B) {
			e, err := Parse(src)
			if err != nil {
				b.Fatal(err)
			}
			bd, err := e.Bind(rec.Schema())
			if err != nil {
				b.Fatal(err)
			}
			var dst []bool
			b.SetBytes(rec.NumRows())
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = bd.Filter(rec, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
