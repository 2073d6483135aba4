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
	"time"

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

// cpuSeconds returns the user and system CPU time the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// scanTables are the metrics tables tests/bench.sh has lancedb write, each
// with the data format its lance writes by default.
var scanTables = []struct{ name, path, format string }{
	{"lance8", "metrics.lance", "2.1"},
	{"lance12", filepath.Join("lance12", "metrics.lance"), "2.2"},
}

// BenchmarkScanMetrics scans all four columns of the lancedb-written metrics
// table (series_id uint64, step int64, timestamp[us, UTC], value float64)
// into Arrow batches: lance 8's (format 2.1) and lance 12's (format 2.2),
// one sub-benchmark each, skipped when tests/bench.sh did not write it.
// Besides rows/s it reports rows per CPU-second of the process.
func BenchmarkScanMetrics(b *testing.B) {
	dir := benchDir(b)
	for _, tb := range scanTables {
		b.Run(tb.name, func(b *testing.B) {
			path := filepath.Join(dir, tb.path)
			if _, err := os.Stat(path); err != nil {
				b.Skipf("%s: %v (tests/bench.sh writes it)", path, err)
			}
			scanMetrics(b, path, tb.format)
		})
	}
}

func scanMetrics(b *testing.B, path, format string) {
	st, err := fsstore.OpenExisting(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ds, err := lance.Open(ctx, st, "", lance.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if got := ds.DataFormat(); got != format {
		b.Fatalf("%s: data format %s, want %s", path, got, format)
	}
	want, err := ds.CountRows(ctx)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.ResetTimer()
	cpu0 := cpuSeconds()
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
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	if cpu > 0 {
		b.ReportMetric(float64(rows)/cpu, "rows/cpu-s")
	}
	b.ReportMetric(peakRSS()/(1<<20), "peak-RSS-MiB")
}

// batchRows is the scan batch size: KV0_BENCH_BATCH_ROWS, else the
// dataset reader's default.
func batchRows() int {
	n, _ := strconv.Atoi(os.Getenv("KV0_BENCH_BATCH_ROWS"))
	return n
}
