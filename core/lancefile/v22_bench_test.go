package lancefile

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
)

// BenchmarkV22Metrics scans all four columns of the metrics-shaped table
// (series_id uint64, step int64, timestamp[us, UTC], value float64; the rows
// of tests/interop/bench.mjs) as lance 12 writes it in format 2.1 and in
// 2.2, into Arrow batches of 64Ki rows. Its 2.2 file dictionary-encodes
// series_id and step, which 2.1 bit-packs and run-length encodes. The
// tables come from `node testdata/v22gen.cjs --bench DIR [rows]`; set
// KV0_V22BENCH to DIR.
func BenchmarkV22Metrics(b *testing.B) {
	dir := os.Getenv("KV0_V22BENCH")
	if dir == "" {
		b.Skip("KV0_V22BENCH is not set (run node testdata/v22gen.cjs --bench DIR)")
	}
	for _, table := range []string{"metrics21", "metrics22"} {
		b.Run(table, func(b *testing.B) {
			lt := openLanceTable(b, dir, table)
			ctx := context.Background()
			want := int(lt.f.NumRows())
			rows := 0
			b.ResetTimer()
			c0 := cpuTime()
			for b.Loop() {
				r, err := lt.f.NewReader(lt.schema.Fields, lt.columnOf, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					a, err := r.Next(ctx, 64<<10)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n += a[0].Len()
				}
				if n != want {
					b.Fatalf("read %d rows, want %d", n, want)
				}
				rows += n
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			reportCPURate(b, float64(rows), c0)
		})
	}
}
