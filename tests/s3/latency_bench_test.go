package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
)

// latency is the injected round-trip time of every request.
const latency = 50 * time.Millisecond

// slowStore adds a fixed latency to every call of the store it wraps and
// counts requests and bytes. Sequential round trips are the elapsed time
// divided by the latency (the wrapped store answers in microseconds).
type slowStore struct {
	store.Store
	requests, bytes atomic.Int64
	noList          bool

	mu       sync.Mutex
	inFlight int
	waves    int // requests that started while none was in flight
	trace    []string
	tracing  bool
}

func (s *slowStore) wait(op, key string, n int) {
	s.requests.Add(1)
	s.mu.Lock()
	if s.inFlight == 0 {
		s.waves++
	}
	if s.tracing {
		s.trace = append(s.trace, fmt.Sprintf("wave %d: %s %s %d", s.waves, op, keyKind(key), n))
	}
	s.inFlight++
	s.mu.Unlock()
	time.Sleep(latency)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}

// sequential is the number of request waves: a wave starts with a request
// issued while no other is in flight, so requests issued together count
// once. Unlike elapsed time it does not grow with the CPU time spent
// between requests.
func (s *slowStore) sequential() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waves
}

func (s *slowStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	s.wait("read", key, len(p))
	s.bytes.Add(int64(len(p)))
	return s.Store.ReadAt(ctx, key, p, off)
}

func (s *slowStore) ReadTail(ctx context.Context, key string, n int) ([]byte, int64, error) {
	s.wait("tail", key, n)
	b, size, err := store.ReadTail(ctx, s.Store, key, n)
	s.bytes.Add(int64(len(b)))
	return b, size, err
}

func (s *slowStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	s.wait("stat", key, 0)
	return s.Store.Stat(ctx, key)
}

func (s *slowStore) List(ctx context.Context, o store.ListOptions) ([]store.ObjectInfo, error) {
	if s.noList {
		return nil, store.ErrNotSupported
	}
	s.wait("list", o.Prefix, 0)
	return s.Store.List(ctx, o)
}

const (
	benchVersions = 1000
	benchRows     = 100_000
)

var (
	benchOnce sync.Once
	benchMem  *store.Memory
	benchDir  string
	benchErr  error
)

// benchTable builds a table with 1,000 versions: 999 small overwrites,
// then one overwrite with 100k rows of two int64 columns, so the latest
// version has one fragment. It is written to memory and to a folder.
func benchTable(b *testing.B) (*store.Memory, string) {
	benchOnce.Do(func() {
		ctx := context.Background()
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "step", Type: arrow.PrimitiveTypes.Int64},
			{Name: "value", Type: arrow.PrimitiveTypes.Int64},
		}, nil)
		batch := func(n int) arrow.RecordBatch {
			rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			defer rb.Release()
			for i := range n {
				rb.Field(0).(*array.Int64Builder).Append(int64(i))
				rb.Field(1).(*array.Int64Builder).Append(int64(i * i % 7919))
			}
			return rb.NewRecordBatch()
		}
		benchMem = store.NewMemory()
		benchDir = b.TempDir()
		local, err := fsstore.Open(benchDir)
		if err != nil {
			benchErr = err
			return
		}
		local.NoSync = true
		for _, st := range []store.Store{benchMem, local} {
			small := batch(1)
			for v := 1; v < benchVersions; v++ {
				if _, err := lance.Overwrite(ctx, st, "t.lance", schema, lance.Batches(small), lance.WriteOptions{}); err != nil {
					benchErr = err
					return
				}
			}
			if _, err := lance.Overwrite(ctx, st, "t.lance", schema, lance.Batches(batch(benchRows)), lance.WriteOptions{}); err != nil {
				benchErr = err
				return
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchMem, benchDir
}

// work is what one benchmark iteration measures.
type work func(ctx context.Context, st store.Store) error

func openLatest(ctx context.Context, st store.Store) error {
	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
	if err == nil && d.Version() != benchVersions {
		panic("wrong version")
	}
	return err
}

func openAndReadColumn(ctx context.Context, st store.Store) error {
	d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
	if err != nil {
		return err
	}
	sc, err := d.Scan(ctx, lance.ScanOptions{Columns: []string{"value"}})
	if err != nil {
		return err
	}
	defer sc.Close()
	rows := int64(0)
	for sc.Next() {
		rows += sc.Record().NumRows()
	}
	if rows != benchRows {
		panic("wrong row count")
	}
	return sc.Err()
}

func report(b *testing.B, elapsed time.Duration, requests, bytes int64) {
	n := float64(b.N)
	b.ReportMetric(float64(elapsed)/float64(latency)/n, "roundtrips/op")
	b.ReportMetric(float64(requests)/n, "requests/op")
	b.ReportMetric(float64(bytes)/n, "bytes/op")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLatency measures, with 50 ms injected per request, opening the
// latest of 1,000 versions and reading one column of 100k rows:
//
//   - list: a store that lists (S3, local), wrapped;
//   - nolist: the same store without listing (hint + probing);
//   - http: httpstore in static mode against a loopback file server that
//     delays every answer by 50 ms (real HTTP requests, bytes on the wire).
func BenchmarkLatency(b *testing.B) {
	mem, dir := benchTable(b)
	for _, w := range []struct {
		name string
		fn   work
	}{{"open", openLatest}, {"open+column", openAndReadColumn}} {
		for _, noList := range []bool{false, true} {
			name := w.name + "/list"
			if noList {
				name = w.name + "/nolist"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				var requests, bytes int64
				var elapsed time.Duration
				for b.Loop() {
					s := &slowStore{Store: mem, noList: noList}
					start := time.Now()
					if err := w.fn(ctx, s); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					requests += s.requests.Load()
					bytes += s.bytes.Load()
				}
				report(b, elapsed, requests, bytes)
			})
		}
		b.Run(w.name+"/http", func(b *testing.B) {
			var requests, sent atomic.Int64
			files := http.FileServer(http.Dir(dir))
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				time.Sleep(latency)
				files.ServeHTTP(&countingWriter{ResponseWriter: rw, n: &sent}, r)
			}))
			defer srv.Close()
			ctx := context.Background()
			var elapsed time.Duration
			for b.Loop() {
				hs, err := httpstore.OpenStatic(srv.URL, httpstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := w.fn(ctx, hs); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
			}
			report(b, elapsed, requests.Load(), sent.Load())
		})
	}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}
