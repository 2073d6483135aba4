// Command benchdata writes the data of the wasm benchmarks and runs their
// native side, so that Chromium and native Go read the same bytes from the
// same server in one run (tests/wasm/bench.mjs drives it):
//
//	benchdata repo DIR    10 runs × 10 series × 100k points, optimized; prints the target series id
//	benchdata table DIR   a 1M-row metrics-shaped Lance dataset at DIR/metrics.lance
//	benchdata read URL ID [WARM]  cold read of one series over HTTP, then WARM (default 5) reads on the
//	                      same handle (JSON: ms, points, warm_ms and warm_cpu_ms, the process's CPU
//	                      time, per warm read)
//	benchdata scan URL    scan of the table over HTTP into an Arrow IPC stream (JSON: ms, rows)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
)

const (
	runs, series, points = 10, 10, 100_000
	tableRows            = 1_000_000
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: benchdata repo DIR | table DIR | read URL ID | scan URL")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "repo":
		err = writeRepo(ctx, os.Args[2])
	case "table":
		err = writeTable(ctx, os.Args[2])
	case "read":
		err = read(ctx, os.Args[2], os.Args[3])
	case "scan":
		err = scan(ctx, os.Args[2])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

func writeRepo(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := fsstore.Open(dir)
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1, FlushRows: 1 << 20, MaxFragments: -1})
	if err != nil {
		return err
	}
	t0 := time.Unix(1_700_000_000, 0)
	var target tracking.SeriesID
	for i := range runs {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: "run" + strconv.Itoa(i), Experiment: "bench"})
		if err != nil {
			return err
		}
		for s := range series {
			name := "metric" + strconv.Itoa(s)
			if i == runs/2 && s == series/2 {
				target, _ = tracking.NewSeriesID(run.ID(), name, nil)
			}
			for p := range points {
				step := int64(p)
				v := float64(p%1000)/1000 + float64(s)
				if err := run.Track(v, name, tracking.TrackOptions{Step: &step, Time: t0.Add(time.Duration(p) * time.Millisecond)}); err != nil {
					return err
				}
			}
		}
		if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
			return err
		}
	}
	if _, err := r.Optimize(ctx); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	fmt.Println(uint64(target))
	return nil
}

// writeTable writes series_id, step, ts, value rows: the metrics shape.
func writeTable(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := fsstore.Open(dir)
	if err != nil {
		return err
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	const batch = 1 << 16
	for off := 0; off < tableRows; off += batch {
		n := min(batch, tableRows-off)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := off; i < off+n; i++ {
			b.Field(0).(*array.Uint64Builder).Append(uint64(i / 100_000))
			b.Field(1).(*array.Int64Builder).Append(int64(i % 100_000))
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
			b.Field(3).(*array.Float64Builder).Append(float64(i%1000) / 7)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	_, err = lance.Create(ctx, st, "metrics.lance", schema, lance.Batches(recs...), lance.WriteOptions{})
	return err
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func printJSON(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

func read(ctx context.Context, url, id string) error {
	sid, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return err
	}
	start := time.Now()
	st, err := httpstore.OpenStatic(url, httpstore.Options{})
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	d, err := r.ReadMany(ctx, []tracking.SeriesID{tracking.SeriesID(sid)}, tracking.ReadOptions{})
	if err != nil {
		return err
	}
	cold := time.Since(start)
	// Warm reads: the pages again, decoded again (the handle keeps files
	// open, not points), which is the decoding cost per point.
	warm := 5
	if len(os.Args) > 4 {
		if warm, err = strconv.Atoi(os.Args[4]); err != nil {
			return err
		}
	}
	if warm == 0 {
		return printJSON(map[string]any{"ms": cold.Seconds() * 1000, "points": d[0].Len()})
	}
	start = time.Now()
	cpu0 := cpuTime()
	for range warm {
		if _, err := r.ReadMany(ctx, []tracking.SeriesID{tracking.SeriesID(sid)}, tracking.ReadOptions{}); err != nil {
			return err
		}
	}
	wall := time.Since(start)
	return printJSON(map[string]any{"ms": cold.Seconds() * 1000, "points": d[0].Len(), "warm_ms": wall.Seconds() * 1000 / float64(warm),
		"warm_cpu_ms": (cpuTime() - cpu0).Seconds() * 1000 / float64(warm)})
}

func scan(ctx context.Context, url string) error {
	st, err := httpstore.OpenStatic(url, httpstore.Options{})
	if err != nil {
		return err
	}
	best := time.Duration(0)
	rows := int64(0)
	for range 3 {
		start := time.Now()
		d, err := lance.Open(ctx, st, "", lance.OpenOptions{})
		if err != nil {
			return err
		}
		rs, err := inspect.ScanRows(ctx, d, inspect.RowsOptions{Limit: -1})
		if err != nil {
			return err
		}
		w := ipc.NewWriter(io.Discard, ipc.WithSchema(rs.Schema()))
		rows = 0
		for rs.Next() {
			rows += rs.Record().NumRows()
			if err := w.Write(rs.Record()); err != nil {
				return err
			}
		}
		if err := rs.Err(); err != nil {
			return err
		}
		rs.Close()
		w.Close()
		if el := time.Since(start); best == 0 || el < best {
			best = el
		}
	}
	return printJSON(map[string]any{"ms": best.Seconds() * 1000, "rows": rows})
}
