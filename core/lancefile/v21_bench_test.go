package lancefile

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// reportCPURate reports rows per CPU-second since c0, where the platform
// tells the process's CPU time.
func reportCPURate(b *testing.B, rows float64, c0 time.Duration) {
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(rows/c.Seconds(), "rows/cpu-s")
	}
}

// BenchmarkV21Scan scans the u64, i64, ts and f64 columns of the lance-written
// "prim" table (100k rows; InlineBitpacking(64) and Flat(64) mini-blocks).
func BenchmarkV21Scan(b *testing.B) {
	dir := v21DataDir(b)
	f := openTable(b, dir, "prim")
	s, err := f.Schema().Project([]string{"u64", "i64", "ts", "f64"})
	if err != nil {
		b.Fatal(err)
	}
	cols := leafColumns(f.Schema())
	ctx := context.Background()
	rows := 0
	c0 := cpuTime()
	for b.Loop() {
		r, err := f.NewReader(s.Fields, cols, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			a, err := r.Next(ctx, 8192)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += a[0].Len()
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	reportCPURate(b, float64(rows), c0)
}

// BenchmarkV21PageInline64 decodes the 100k-row InlineBitpacking(64) page
// of the "prim" table's u64 column.
func BenchmarkV21PageInline64(b *testing.B) {
	dir := v21DataDir(b)
	f := openTable(b, dir, "prim")
	fl := f.Schema().Field("u64")
	li, err := newLeafInfo([]*Field{fl}, 0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := f.readPage(context.Background(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(p.info.rows) * 8)
	c0 := cpuTime()
	for b.Loop() {
		if _, err := decodePage(li, p.info.enc, p.bufs, p.info.rows, f.version); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(p.info.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	reportCPURate(b, float64(p.info.rows)*float64(b.N), c0)
}
