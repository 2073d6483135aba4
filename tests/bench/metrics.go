package bench

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The metrics-shaped table of the benchmarks, generated exactly as
// tests/interop/bench.mjs generates it for lancedb: 100 series, row r is
// step r/100 of series r%100, values from a mulberry32 PRNG seeded with 42.
const (
	metricsSeries     = 100
	metricsBatchRows  = 1_000_000
	metricsSeriesBase = 1_000_000
	metricsT0         = 1_700_000_000_000_000 // µs
	metricsRowBytes   = 32                    // input bytes a row: 4 × 8
	metricsSeed       = 42
)

var metricsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// mulberry32 is the PRNG of bench.mjs, in 32-bit unsigned arithmetic (the
// bits of JavaScript's Math.imul and >>> are the same).
type mulberry32 uint32

func (m *mulberry32) next() float64 {
	*m += 0x6d2b79f5
	s := uint32(*m)
	t := (s ^ s>>15) * (1 | s)
	t = (t + (t^t>>7)*(61|t)) ^ t
	return float64(t^t>>14) / 4294967296
}

// fdlibmExp is fdlibm's exp (e_exp.c), which V8 implements Math.exp with,
// so that values match bench.mjs bit for bit (math.Exp may use a different
// algorithm and differ in the last place). Products are rounded explicitly
// so that no multiply-add is fused. Arguments here are in [-1000, 0].
func fdlibmExp(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		log2e = 1.44269504088896338700e+00
		p1    = 1.66666666666666019037e-01
		p2    = -2.77777777770155933842e-03
		p3    = 6.61375632143793436117e-05
		p4    = -1.65339022054652515390e-06
		p5    = 4.13813679705723846039e-08
	)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	case x > 7.09782712893383973096e+02:
		return math.Inf(1)
	case x < -7.45133219101941108420e+02:
		return 0
	case math.Abs(x) < 1.0/(1<<28):
		return 1 + x
	}
	var k int
	if x < 0 {
		k = int(float64(log2e*x) - 0.5)
	} else {
		k = int(float64(log2e*x) + 0.5)
	}
	hi := x - float64(float64(k)*ln2Hi)
	lo := float64(float64(k) * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*(p1+float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return math.Ldexp(y, k)
}

// metricsGen produces the rows of the table in order.
type metricsGen struct {
	rnd  mulberry32
	next int64 // next row
}

func newMetricsGen() *metricsGen { return &metricsGen{rnd: metricsSeed} }

// batch returns the next n rows.
func (g *metricsGen) batch(n int) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	sid := make([]uint64, n)
	step := make([]int64, n)
	ts := make([]arrow.Timestamp, n)
	val := make([]float64, n)
	for i := range n {
		row := g.next + int64(i)
		s, st := row%metricsSeries, row/metricsSeries
		sid[i] = metricsSeriesBase + uint64(s)
		step[i] = st
		ts[i] = arrow.Timestamp(metricsT0 + st*1000 + s)
		e := fdlibmExp(-float64(st) / 20000)
		val[i] = float64(e*(1+float64(s)/100)) + float64((g.rnd.next()-0.5)*0.01)
	}
	g.next += int64(n)
	b := array.NewRecordBuilder(mem, metricsSchema)
	defer b.Release()
	b.Field(0).(*array.Uint64Builder).AppendValues(sid, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(step, nil)
	b.Field(2).(*array.TimestampBuilder).AppendValues(ts, nil)
	b.Field(3).(*array.Float64Builder).AppendValues(val, nil)
	return b.NewRecordBatch()
}

// metricsBatches returns the table's rows in batches of 1,000,000, as
// bench.mjs writes them.
func metricsBatches(rows int64) []arrow.RecordBatch {
	g := newMetricsGen()
	var out []arrow.RecordBatch
	for g.next < rows {
		out = append(out, g.batch(int(min(metricsBatchRows, rows-g.next))))
	}
	return out
}
