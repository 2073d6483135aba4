package lancefile

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// metricsSchema is the benchmark table of issue 3 (tests/interop/bench.mjs).
var metricsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// metricsBatch builds rows [start, start+n) the way bench.mjs does: 100
// series, a step shared by each group of 100 rows, microsecond timestamps
// 1 ms apart per step, and a decaying value with noise.
func metricsBatch(start, n int) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	sid := make([]uint64, n)
	step := make([]int64, n)
	ts := make([]arrow.Timestamp, n)
	val := make([]float64, n)
	seed := uint32(12345 + start)
	rnd := func() float64 { // xorshift, deterministic
		seed ^= seed << 13
		seed ^= seed >> 17
		seed ^= seed << 5
		return float64(seed) / 4294967296
	}
	for i := range n {
		row := start + i
		s, st := row%100, row/100
		sid[i] = 1_000_000 + uint64(s)
		step[i] = int64(st)
		ts[i] = arrow.Timestamp(1_700_000_000_000_000 + int64(st)*1000 + int64(s))
		val[i] = math.Exp(-float64(st)/20000)*(1+float64(s)/100) + (rnd()-0.5)*0.01
	}
	b0 := array.NewUint64Builder(mem)
	b0.AppendValues(sid, nil)
	b1 := array.NewInt64Builder(mem)
	b1.AppendValues(step, nil)
	b2 := array.NewTimestampBuilder(mem, metricsSchema.Field(2).Type.(*arrow.TimestampType))
	b2.AppendValues(ts, nil)
	b3 := array.NewFloat64Builder(mem)
	b3.AppendValues(val, nil)
	return array.NewRecordBatch(metricsSchema, []arrow.Array{b0.NewArray(), b1.NewArray(), b2.NewArray(), b3.NewArray()}, int64(n))
}

// BenchmarkWriteMetrics writes 1M-row batches of the metrics table into one
// file of each version and reports rows/s and bytes per row of the result.
func BenchmarkWriteMetrics(b *testing.B) {
	const batchRows, batches = 1 << 20, 4
	recs := make([]arrow.RecordBatch, batches)
	for i := range recs {
		recs[i] = metricsBatch(i*batchRows, batchRows)
	}
	s, err := SchemaFromArrow(metricsSchema, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []Version{V2_1, V2_2} {
		b.Run("v"+v.String(), func(b *testing.B) { benchWriteMetrics(b, s, v, recs, batchRows*batches) })
	}
}

func benchWriteMetrics(b *testing.B, s *Schema, v Version, recs []arrow.RecordBatch, nrows int) {
	b.SetBytes(int64(nrows * 32))
	var size int
	c0 := cpuTime()
	for b.Loop() {
		w, err := NewWriter(s, WriterOptions{Version: v})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		out, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	rows := float64(nrows)
	b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	reportCPURate(b, rows*float64(b.N), c0)
	b.ReportMetric(float64(size)/rows, "bytes/row")
}
