package tracking

import (
	"context"
	"fmt"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

func reportRate(b *testing.B, points int) {
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkTrackBuffered measures Track into the buffer alone: the flushes
// (to a memory store, every 2^20 points) run with the timer stopped.
func BenchmarkTrackBuffered(b *testing.B) {
	ctx := context.Background()
	r, err := OpenRepo(ctx, store.NewMemory(), "", RepoOptions{FlushInterval: -1, FlushRows: 1<<20 + 1})
	if err != nil {
		b.Fatal(err)
	}
	run, _ := r.StartRun(ctx, RunSpec{Name: "bench"})
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("metric/%d", i)
	}
	n := 0
	for b.Loop() {
		_ = run.Track(float64(n), names[n%100])
		n++
		if n%(1<<20) == 0 {
			b.StopTimer()
			if err := r.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	reportRate(b, n)
}

// BenchmarkTrackDisk measures Track end to end with flushes of 50 000
// points to a local folder, the final flush included.
func BenchmarkTrackDisk(b *testing.B) {
	ctx := context.Background()
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	run, _ := r.StartRun(ctx, RunSpec{Name: "bench"})
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("metric/%d", i)
	}
	n := 0
	for b.Loop() {
		_ = run.Track(float64(n%1000)*0.5, names[n%100])
		n++
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	reportRate(b, n)
}

// BenchmarkReadManyOptimized reads one 100k-point series of ten after
// Optimize, from a local folder, whole and downsampled to 1,000 points
// (from the level Optimize stored) and to 1,001 (no level: decoded), then
// all ten downsampled in one call, both ways.
func BenchmarkReadManyOptimized(b *testing.B) {
	ctx := context.Background()
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	run, _ := r.StartRun(ctx, RunSpec{Name: "bench"})
	for s := 0; s < 100_000; s++ {
		for m := 0; m < 10; m++ {
			_ = run.Track(float64(s), fmt.Sprintf("m%d", m))
		}
	}
	if _, err := r.Optimize(ctx); err != nil {
		b.Fatal(err)
	}
	id := seriesID(run.ID(), "m3", "{}")
	for _, mp := range []int{0, 1000, 1001} {
		b.Run(fmt.Sprintf("maxPoints=%d", mp), func(b *testing.B) {
			for b.Loop() {
				out, err := r.ReadMany(ctx, []SeriesID{id}, ReadOptions{MaxPoints: mp})
				if err != nil || (mp == 0 && out[0].Len() != 100_000) {
					b.Fatal(err, out[0].Len())
				}
			}
		})
	}
	// All ten series in one read, as a chart of several lines asks.
	ids := make([]SeriesID, 10)
	for m := range ids {
		ids[m] = seriesID(run.ID(), fmt.Sprintf("m%d", m), "{}")
	}
	for _, mp := range []int{1000, 1001} {
		b.Run(fmt.Sprintf("series=10/maxPoints=%d", mp), func(b *testing.B) {
			n := 0
			for b.Loop() {
				n++
				out, err := r.ReadMany(ctx, ids, ReadOptions{MaxPoints: mp})
				if err != nil || out[9].Len() == 0 {
					b.Fatal(err)
				}
			}
			reportRate(b, n*1_000_000)
		})
	}
}

// BenchmarkSeriesStats reads the statistics of 1,000 series (50 runs × 20
// metrics × 1,000 steps).
func BenchmarkSeriesStats(b *testing.B) {
	ctx := context.Background()
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var ids []SeriesID
	for k := 0; k < 50; k++ {
		run, _ := r.StartRun(ctx, RunSpec{Name: fmt.Sprint(k)})
		for m := 0; m < 20; m++ {
			name := fmt.Sprintf("m%d", m)
			ids = append(ids, seriesID(run.ID(), name, "{}"))
			for s := 0; s < 1000; s++ {
				_ = run.Track(float64(s), name)
			}
		}
	}
	if err := r.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, opt := range []bool{false, true} {
		if opt {
			if _, err := r.Optimize(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("optimized=%v", opt), func(b *testing.B) {
			for b.Loop() {
				s, err := r.SeriesStats(ctx, ids)
				if err != nil || len(s) != 1000 {
					b.Fatal(err, len(s))
				}
			}
		})
	}
}

// BenchmarkRuns lists 1,000 runs (each with a few change rows).
func BenchmarkRuns(b *testing.B) {
	ctx := context.Background()
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for k := 0; k < 1000; k++ {
		run, _ := r.StartRun(ctx, RunSpec{Name: fmt.Sprint(k), Experiment: fmt.Sprint("e", k%10), Tags: []string{"a", "b"}})
		_ = run.SetParams(map[string]any{"lr": 0.1 * float64(k%7), "bs": 32})
		s := StatusFinished
		_ = run.Update(RunPatch{Status: &s})
	}
	if err := r.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			runs, err := r.Runs(ctx, RunFilter{})
			if err != nil || len(runs) != 1000 {
				b.Fatal(err, len(runs))
			}
		}
	})
	b.Run("param-filter", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Runs(ctx, RunFilter{Params: []ParamFilter{{Key: "lr", Op: ">", Value: 0.3}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
