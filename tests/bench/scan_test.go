// Package bench holds kv0's side-by-side benchmarks. They need data written
// by lancedb, so tests/bench.sh prepares it and passes its location in
// KV0_BENCH_DIR; without it the benchmarks skip.
package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/native/fsstore"
)

func benchDir(b *testing.B) string {
	dir := os.Getenv("KV0_BENCH_DIR")
	if dir == "" {
		b.Skip("KV0_BENCH_DIR is not set; run tests/bench.sh (make bench)")
	}
	return dir
}

// peakRSS returns the process's peak resident set size in bytes.
func peakRSS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) * 1024
}

// BenchmarkScanMetrics scans all four columns of the lancedb-written metrics
// table (series_id uint64, step int64, timestamp[us, UTC], value float64)
// into Arrow batches.
func BenchmarkScanMetrics(b *testing.B) {
	dir := benchDir(b)
	st, err := fsstore.OpenExisting(filepath.Join(dir, "metrics.lance"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ds, err := lance.Open(ctx, st, "", lance.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	want, err := ds.CountRows(ctx)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		sc, err := ds.Scan(ctx, lance.ScanOptions{BatchRows: batchRows()})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for sc.Next() {
			n += sc.Record().NumRows()
		}
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
		sc.Close()
		if uint64(n) != want {
			b.Fatalf("scanned %d rows, want %d", n, want)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(peakRSS()/(1<<20), "peak-RSS-MiB")
}

// batchRows is the scan batch size: KV0_BENCH_BATCH_ROWS, else the
// dataset reader's default.
func batchRows() int {
	n, _ := strconv.Atoi(os.Getenv("KV0_BENCH_BATCH_ROWS"))
	return n
}
