package kv

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Benchmarks of the in-memory view with 16-byte keys and 100-byte values.
// Run with: go test -run XXX -bench . -benchtime 1x ./core/kv (CI) or
// -benchtime 3s -count 10 for numbers. BENCH_KEYS in the name is the view
// size the reads run against.

const (
	benchKeys = 1_000_000
	benchVal  = 100
)

func benchKey(dst []byte, i uint64) []byte {
	dst = dst[:16]
	binary.BigEndian.PutUint64(dst, i*0x9e3779b97f4a7c15) // scattered, unique
	binary.BigEndian.PutUint64(dst[8:], i)
	return dst
}

var benchValue = make([]byte, benchVal)

// benchView builds a view of n keys and reports its bytes per entry.
func benchView(b *testing.B, n int) *view {
	b.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := newView()
	key := make([]byte, 16)
	for i := range uint64(n) {
		v.applyPut(i+1, benchKey(key, i), benchValue, nil)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/entry")
	return v
}

func BenchmarkViewPut(b *testing.B) {
	v := newView()
	key := make([]byte, 16)
	var i uint64
	b.SetBytes(16 + benchVal)
	b.ReportAllocs()
	for b.Loop() {
		v.applyPut(i+1, benchKey(key, i%benchKeys), benchValue, nil)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkViewBuild1M(b *testing.B) {
	for b.Loop() {
		benchView(b, benchKeys)
	}
}

func BenchmarkViewGet(b *testing.B) {
	v := benchView(b, benchKeys)
	key := make([]byte, 16)
	rng := rand.New(rand.NewPCG(1, 2))
	b.SetBytes(16 + benchVal)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if v.lookup(benchKey(key, rng.Uint64N(benchKeys))) == nil {
			b.Fatal("missing key")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkViewScan(b *testing.B) {
	v := benchView(b, benchKeys)
	b.SetBytes((16 + benchVal) * benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		v.ascend(nil, func(e entry) bool { n += len(entryPayload(e)); return true })
	}
	b.ReportMetric(float64(b.N)*benchKeys/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkDB measures the public API on a DB over the in-memory fake log
// (no WAL): puts apply to the view and the buffer; gets copy the value;
// the iterator walks in chunks of 256.
func BenchmarkDB(b *testing.B) {
	for _, name := range []string{"Put", "Get", "Iterate"} {
		b.Run(name, func(b *testing.B) {
			db, log := benchDB(b)
			defer db.Close()
			_ = log
			key := make([]byte, 16)
			n := 100_000
			if name != "Put" {
				for i := range uint64(n) {
					db.d.write(context.Background(), putRecord(benchKey(key, i)), 1, nil)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.SetBytes(16 + benchVal)
			b.ReportAllocs()
			b.ResetTimer()
			switch name {
			case "Put":
				var i uint64
				for b.Loop() {
					if err := db.Put(context.Background(), benchKey(key, i), benchValue, nil); err != nil {
						b.Fatal(err)
					}
					i++
				}
			case "Get":
				for b.Loop() {
					if _, err := db.Get(context.Background(), benchKey(key, rng.Uint64N(uint64(n)))); err != nil {
						b.Fatal(err)
					}
				}
			case "Iterate":
				it, _ := db.NewIter(context.Background(), nil)
				it.First()
				for b.Loop() {
					if !it.Next() {
						it.First()
					}
				}
				it.Close()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

func putRecord(key []byte) []byte {
	rec := make([]byte, recordHeader, recordHeader+40+benchVal)
	rec[0] = RecordKind
	rec = binary.AppendUvarint(rec, 1)
	return appendOp(rec, OpPut, key, benchValue)
}

// nopLog is an OpLog that accepts every append and holds nothing, so DB
// benchmarks measure the handle, not a fake store.
type nopLog struct{ OpLog }

func (nopLog) Append(_ ctxT, rows []Row) (CommitResult, error) {
	return CommitResult{Version: 1}, nil
}
func (nopLog) Latest(ctxT) (uint64, error) { return 0, nil }

type ctxT = context.Context

func benchDB(b *testing.B) (*DB, OpLog) {
	log := nopLog{}
	db, err := Open(context.Background(), log, &Options{FlushInterval: -1, RefreshInterval: -1, MaxFragments: -1, WriteBufferSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	return db, log
}
