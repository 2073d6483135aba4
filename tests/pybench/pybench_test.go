// Package pybench holds the Go halves of the Python package's benchmarks
// (tests/python/bench.py runs them and the Python halves in one run and
// prints the ratios). Each benchmark does one fixed workload per
// iteration, the same one bench.py does from Python, on a local folder
// with the WAL in batch mode, and reports ns per point (or key).
package pybench

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/wal"
)

var (
	points  = flag.Int("pybench.points", 200_000, "points of the per-point tracking workload")
	batched = flag.Int("pybench.batched", 1_000_000, "points of the batched tracking workload")
	keys    = flag.Int("pybench.keys", 200_000, "keys of the put and get workloads")
	iterN   = flag.Int("pybench.iter", 1_000_000, "keys of the iteration workload")
)

const names = 100

func metricNames() []string {
	n := make([]string, names)
	for i := range n {
		n[i] = fmt.Sprintf("metric/%d", i)
	}
	return n
}

func openRepo(b *testing.B) *tracking.Repo {
	dir := b.TempDir()
	st, err := fsstore.Open(filepath.Join(dir, "repo"))
	if err != nil {
		b.Fatal(err)
	}
	l, err := wal.Open("repo:"+filepath.Join(dir, "repo"), wal.Options{Dir: filepath.Join(dir, "wal")})
	if err != nil {
		b.Fatal(err)
	}
	r, err := tracking.OpenRepo(context.Background(), st, "", tracking.RepoOptions{WAL: l})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func perPoint(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/point")
}

// cpuTime is the CPU time (user + system, every thread) of the process so
// far. Its difference over a workload is far less sensitive to other
// processes' load than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerPoint reports the CPU time of the timed parts per point.
func cpuPerPoint(b *testing.B, cpu time.Duration, n int) {
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/point")
}

// BenchmarkTrack: Run.Track one point at a time over 100 series, the final
// flush and close included.
func BenchmarkTrack(b *testing.B) {
	ns := metricNames()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		r := openRepo(b)
		b.StartTimer()
		c0 := cpuTime()
		run, err := r.StartRun(context.Background(), tracking.RunSpec{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		for i := range *points {
			if err := run.Track(float64(i)*0.5, ns[i%names]); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	perPoint(b, *points)
	cpuPerPoint(b, cpu, *points)
}

// BenchmarkTrackBatched: batches of 1,000 points of one series with their
// steps (what Run.track_many does for each batch), series taken in turn.
func BenchmarkTrackBatched(b *testing.B) {
	ns := metricNames()
	values := make([]float64, 1000)
	for i := range values {
		values[i] = float64(i) * 0.25
	}
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		r := openRepo(b)
		b.StartTimer()
		c0 := cpuTime()
		run, err := r.StartRun(context.Background(), tracking.RunSpec{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		for j := range *batched / 1000 {
			name := ns[j%names]
			base := int64(j/names) * 1000
			for i, v := range values {
				step := base + int64(i)
				if err := run.Track(v, name, tracking.TrackOptions{Step: &step}); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	perPoint(b, *batched)
	cpuPerPoint(b, cpu, *batched)
}

func openDB(b *testing.B, dir string) *kv.DB {
	db, err := kvdb.Open(context.Background(), filepath.Join(dir, "db"), kvdb.Options{WALDir: filepath.Join(dir, "wal")})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// key is bench.py's key: "key" and the index as 8 big-endian bytes.
func key(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte("key"), uint64(i))
}

var value = make([]byte, 100)

// BenchmarkPut: DB.Put of 100-byte values one call at a time, close
// included.
func BenchmarkPut(b *testing.B) {
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db := openDB(b, b.TempDir())
		b.StartTimer()
		c0 := cpuTime()
		for i := range *keys {
			if err := db.Put(context.Background(), key(i), value, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	perPoint(b, *keys)
	cpuPerPoint(b, cpu, *keys)
}

// BenchmarkWriteBatch: DB.Write of batches of 1,000 puts, close included.
func BenchmarkWriteBatch(b *testing.B) {
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db := openDB(b, b.TempDir())
		b.StartTimer()
		c0 := cpuTime()
		var wb kv.Batch
		for j := range *batched / 1000 {
			wb.Reset()
			for i := range 1000 {
				wb.Put(key(j*1000+i), value)
			}
			if err := db.Write(context.Background(), &wb, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	perPoint(b, *batched)
	cpuPerPoint(b, cpu, *batched)
}

func filled(b *testing.B, n int) *kv.DB {
	db := openDB(b, b.TempDir())
	var wb kv.Batch
	for j := 0; j < n; j += 1000 {
		wb.Reset()
		for i := j; i < min(j+1000, n); i++ {
			wb.Put(key(i), value)
		}
		if err := db.Write(context.Background(), &wb, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkGet: DB.Get of random existing keys one call at a time.
func BenchmarkGet(b *testing.B) {
	db := filled(b, *keys)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, *keys)
	for i := range order {
		order[i] = rng.IntN(*keys)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		for _, i := range order {
			if _, err := db.Get(context.Background(), key(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	perPoint(b, *keys)
	cpuPerPoint(b, cpuTime()-c0, *keys)
}

// BenchmarkIterate: every key and value of a 1M-key database, forward.
func BenchmarkIterate(b *testing.B) {
	db := filled(b, *iterN)
	defer db.Close()
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		it, err := db.NewIter(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			_, _ = it.Key(), it.Value()
			n++
		}
		if err := it.Close(); err != nil || n != *iterN {
			b.Fatal(err, n)
		}
	}
	perPoint(b, *iterN)
	cpuPerPoint(b, cpuTime()-c0, *iterN)
}
