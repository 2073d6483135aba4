package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// fixture is a store holding datasets and a tracking repository at its
// root, written by kv0 itself:
//
//	t.lance            v1: ids 0..99, v2: + ids 100..199, tag "first" -> v1
//	nested/a/z.lance   10 rows
//	many.lance         5 fragments of 2000 rows (for streams cut half-way)
//	runs.lance ...     3 runs (one archived) with params and series
type fixture struct {
	st     *store.Memory
	runIDs []string
	series map[string]tracking.SeriesID // "run/name" -> id (no context)
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
}, nil)

func batch(from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 3 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row <%d> & \"q\"", i))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 8)
	}
	return b.NewRecordBatch()
}

var (
	fixtureOnce sync.Once
	fixtureVal  *fixture
	fixtureErr  error
)

// newFixture builds the fixture once and returns a copy of its store, so
// tests may change theirs.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	fixtureOnce.Do(func() { fixtureVal, fixtureErr = buildFixture() })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	cp := store.NewMemory()
	ctx := context.Background()
	objs, err := fixtureVal.st.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		b := make([]byte, o.Size)
		if err := fixtureVal.st.ReadAt(ctx, o.Key, b, 0); err != nil {
			t.Fatal(err)
		}
		if err := cp.Put(ctx, o.Key, b); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{st: cp, runIDs: fixtureVal.runIDs, series: fixtureVal.series}
}

func buildFixture() (*fixture, error) {
	ctx := context.Background()
	f := &fixture{st: store.NewMemory(), series: map[string]tracking.SeriesID{}}
	d, err := lance.Create(ctx, f.st, "t.lance", testSchema, lance.Batches(batch(0, 100)), lance.WriteOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := d.Append(ctx, lance.Batches(batch(100, 100)), lance.WriteOptions{}); err != nil {
		return nil, err
	}
	if err := d.CreateTag(ctx, "first", 1); err != nil {
		return nil, err
	}
	if _, err := lance.Create(ctx, f.st, "nested/a/z.lance", testSchema, lance.Batches(batch(0, 10)), lance.WriteOptions{}); err != nil {
		return nil, err
	}
	var recs []arrow.RecordBatch
	for i := 0; i < 5; i++ {
		recs = append(recs, batch(i*2000, 2000))
	}
	if _, err := lance.Create(ctx, f.st, "many.lance", testSchema, lance.Batches(recs...), lance.WriteOptions{MaxRowsPerFile: 2000}); err != nil {
		return nil, err
	}
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		return nil, err
	}
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	for k := 0; k < 3; k++ {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: fmt.Sprintf("run-%d", k), Experiment: []string{"a", "a", "b"}[k],
			Tags: []string{"t", []string{"x", "y", "x"}[k]}, Description: "<html> & friends"})
		if err != nil {
			return nil, err
		}
		f.runIDs = append(f.runIDs, run.ID())
		if err := run.SetParams(map[string]any{"optimizer": map[string]any{"lr": []float64{0.1, 0.001, 0.005}[k]}, "model": "m" + fmt.Sprint(k)}); err != nil {
			return nil, err
		}
		for s := 0; s < 3000; s++ {
			step := int64(s)
			opts := tracking.TrackOptions{Step: &step, Time: base.Add(time.Duration(s) * 1500 * time.Microsecond)}
			if s%2 == 0 {
				e := int64(s / 1000)
				opts.Epoch = &e
			}
			v := math.Sin(float64(s)/100) * float64(k+1)
			if s == 1234 {
				v = math.NaN()
			}
			if err := run.Track(v, "loss", opts); err != nil {
				return nil, err
			}
		}
		if err := run.Track(1, "once", tracking.TrackOptions{Context: map[string]any{"subset": "val"}}); err != nil {
			return nil, err
		}
		id, _ := tracking.NewSeriesID(run.ID(), "loss", nil)
		f.series[fmt.Sprintf("%d/loss", k)] = id
		if k == 1 {
			a := true
			if err := run.Update(tracking.RunPatch{Archived: &a}); err != nil {
				return nil, err
			}
		}
		if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
			return nil, err
		}
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return f, nil
}

// countingStore counts every call that reaches the store.
type countingStore struct {
	store.Store
	calls atomic.Int64
	reads atomic.Int64 // ReadAt calls of anything but the version probes (a latest-version hint, a manifest, a tag)
}

func (c *countingStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	c.calls.Add(1)
	if !strings.HasSuffix(key, "latest_version_hint.json") && !strings.HasSuffix(key, ".manifest") && !strings.Contains(key, "_refs/tags/") {
		c.reads.Add(1)
	}
	return c.Store.ReadAt(ctx, key, p, off)
}

func (c *countingStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	c.calls.Add(1)
	return c.Store.Stat(ctx, key)
}

func (c *countingStore) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	c.calls.Add(1)
	return c.Store.List(ctx, opts)
}

// faultStore fails reads of data files once armed, after okReads more of
// them succeeded.
type faultStore struct {
	store.Store
	armed   atomic.Bool
	okReads atomic.Int64
	err     error
}

var errInjected = errors.New("injected store failure")

func (f *faultStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if f.armed.Load() && strings.Contains(key, "/data/") {
		if f.okReads.Add(-1) < 0 {
			return fmt.Errorf("reading %s: %w", key, f.err)
		}
	}
	return f.Store.ReadAt(ctx, key, p, off)
}

// get sends one request to h and returns the recorded answer.
func get(t testing.TB, h http.Handler, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// errorOf decodes an error body, failing the test when it is not one.
func errorOf(t testing.TB, w *httptest.ResponseRecorder) ErrorBody {
	t.Helper()
	var e ErrorBody
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error answer has Content-Type %q", ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not an error body (%v): %q", err, w.Body.String())
	}
	return e
}

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
