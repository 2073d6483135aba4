package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// trackPoint commits one more point of run's "loss" (a new version of the
// metrics table).
func trackPoint(t *testing.T, st store.Store, run string, step int64, v float64) {
	t.Helper()
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := r.ResumeRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Track(v, "loss", tracking.TrackOptions{Step: &step}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// dropParams deletes a run's parameters straight from the params table: a
// new version of that table alone.
func dropParams(t *testing.T, st store.Store, run string) {
	t.Helper()
	ctx := context.Background()
	d, err := lance.Open(ctx, st, tracking.ParamsTable, lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, stats, err := d.Delete(ctx, fmt.Sprintf("run_id = '%s'", run)); err != nil || stats.RowsDeleted == 0 {
		t.Fatalf("deleting the params of %s: %+v %v", run, stats, err)
	}
}

// TestAnswerCache checks the answers kept by version: the same bytes as
// a handler keeping none, no data read for a repeated request, and a new
// answer once a table has a new version.
func TestAnswerCache(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	h := New(cs, "", Options{})
	ref := New(f.st, "", Options{AnswerCache: -1})
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	targets := []string{"/api/v1/series/points?ids=" + id, "/api/v1/series/points?max_points=10&ids=" + id,
		"/api/v1/series/points?ids=" + id + "&max_points=10", // the same query: the same key
		"/api/v1/series/points?max_points=0&from_step=10&to_step=20&ids=" + id,
		"/api/v1/series/points?ids=" + id + "," + strconv.FormatUint(uint64(f.series["2/loss"]), 10),
		"/api/v1/stats?ids=" + id}
	check := func(when string) {
		t.Helper()
		for _, target := range targets {
			want := get(t, ref, target)
			if want.Code != 200 {
				t.Fatalf("%s: %d %s", target, want.Code, want.Body)
			}
			for i := 0; i < 2; i++ {
				before := cs.reads.Load()
				w := get(t, h, target)
				if w.Code != 200 || w.Body.String() != want.Body.String() {
					t.Fatalf("%s %s (%d): %d, body differs from an uncached handler's:\n%.300s\nwant\n%.300s", when, target, i, w.Code, w.Body, want.Body)
				}
				for _, k := range []string{"ETag", "Cache-Control", "Content-Type", "Content-Length"} {
					if w.Header().Get(k) != want.Header().Get(k) {
						t.Errorf("%s %s: %s %q, want %q", when, target, k, w.Header().Get(k), want.Header().Get(k))
					}
				}
				if n := cs.reads.Load() - before; i == 1 && n != 0 {
					t.Errorf("%s %s: a repeated request read %d objects (want version probes only)", when, target, n)
				}
			}
		}
	}
	check("first")
	if n := h.answers.len(); n != len(targets)-1 {
		t.Errorf("%d answers kept, want %d", n, len(targets)-1)
	}
	trackPoint(t, f.st, f.runIDs[0], 7777, 0.25)
	check("after a new point")
	w := get(t, h, targets[0])
	if !strings.Contains(w.Body.String(), ",7777]") || !strings.Contains(w.Body.String(), ",0.25]") {
		t.Errorf("points after a new point: %.200s...", w.Body)
	}
	// Parameters play no part in points and statistics: a commit of the
	// params table alone keeps their answers (the same ETag, nothing read
	// again), while /api/v1/versions reports it.
	vBefore := get(t, h, "/api/v1/versions").Body.String()
	dropParams(t, f.st, f.runIDs[0])
	if vAfter := get(t, h, "/api/v1/versions").Body.String(); vAfter == vBefore || !strings.Contains(vAfter, `"runs"`) {
		t.Errorf("versions after a params commit: %s, before %s", vAfter, vBefore)
	}
	kept := h.answers.len()
	check("after a params commit")
	if n := h.answers.len(); n != kept {
		t.Errorf("a params commit made %d new answers, want none (versions %s, before %s)", n-kept, get(t, h, "/api/v1/versions").Body, vBefore)
	}
	// Errors are never kept.
	for i := 0; i < 2; i++ {
		if w := get(t, h, "/api/v1/series/points?ids=12345"); w.Code != 404 {
			t.Errorf("an unknown series: %d %s", w.Code, w.Body)
		}
	}
	// Nothing is kept with the cache off, and runs (whose status follows
	// the clock) are never kept.
	get(t, h, "/api/v1/runs")
	get(t, h, "/api/v1/runs/"+f.runIDs[0])
	if n := h.answers.len(); n != 2*(len(targets)-1) {
		t.Errorf("%d answers kept, want %d", n, 2*(len(targets)-1))
	}
	if n := ref.answers.len(); n != 0 {
		t.Errorf("AnswerCache -1 kept %d answers", n)
	}
}

// hookStore runs hook once, before the first read of a metrics data file
// once armed.
type hookStore struct {
	store.Store
	armed atomic.Bool
	once  sync.Once
	hook  func()
}

func (s *hookStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if s.armed.Load() && strings.Contains(key, "metrics.lance/data/") {
		s.once.Do(s.hook)
	}
	return s.Store.ReadAt(ctx, key, p, off)
}

// TestAnswerCacheCommitWhileBuilding checks that an answer built while a
// commit landed is not kept under the versions read before it: it may
// hold the new point, which those versions do not.
func TestAnswerCacheCommitWhileBuilding(t *testing.T) {
	f := newFixture(t)
	hs := &hookStore{Store: f.st}
	hs.hook = func() { trackPoint(t, f.st, f.runIDs[0], 8888, 0.5) }
	h := New(hs, "", Options{})
	target := "/api/v1/series/points?max_points=0&ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	if w := get(t, h, "/api/v1/versions"); w.Code != 200 { // the handler follows the tables
		t.Fatal(w.Code)
	}
	hs.armed.Store(true)
	if w := get(t, h, target); w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if n := h.answers.len(); n != 0 {
		t.Fatalf("an answer built across a commit was kept (%d answers)", n)
	}
	w := get(t, h, target)
	if w.Code != 200 || !strings.Contains(w.Body.String(), ",8888]") {
		t.Fatalf("after the commit: %d %.200s", w.Code, w.Body)
	}
	if n := h.answers.len(); n != 1 {
		t.Errorf("%d answers kept after a request on settled versions, want 1", n)
	}
	if w2 := get(t, h, target); w2.Body.String() != w.Body.String() {
		t.Error("the kept answer differs")
	}
}

func TestAnswerCacheBudget(t *testing.T) {
	c := newAnswerCache(1000)
	for i := 0; i < 20; i++ {
		c.put(strconv.Itoa(i), make([]byte, 100))
	}
	if c.size > 1000 || c.len() != 1000/(100+2) {
		t.Errorf("size %d, %d answers", c.size, c.len())
	}
	if c.get("19") == nil || c.get("0") != nil {
		t.Error("not least recently used out first")
	}
	c.put("big", make([]byte, 200)) // over an eighth of the budget
	if c.get("big") != nil {
		t.Error("an answer over an eighth of the budget was kept")
	}
	off := newAnswerCache(0)
	off.put("a", []byte("x"))
	if off.get("a") != nil {
		t.Error("a cache of 0 bytes kept an answer")
	}
}

// BenchmarkPoints answers one series' points (1,000 of 3,000, with bands)
// from a warm handler: kept answers (the repeated request of a dashboard
// polling unchanged data) and every request built anew.
func BenchmarkPoints(b *testing.B) {
	f := newFixture(b)
	target := "/api/v1/series/points?ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	for _, c := range []struct {
		name  string
		cache int64
	}{{"kept", 0}, {"uncached", -1}} {
		b.Run(c.name, func(b *testing.B) {
			h := New(f.st, "", Options{AnswerCache: c.cache})
			defer h.Close()
			req := httptest.NewRequest(http.MethodGet, target, nil)
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, req)
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
			b.SetBytes(w.n)
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status and the
// body's length.
type discardWriter struct {
	h    http.Header
	code int
	n    int64
}

func (w *discardWriter) Header() http.Header  { return w.h }
func (w *discardWriter) WriteHeader(code int) { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) {
	w.n = int64(len(p))
	return len(p), nil
}

// recordingHolder is a WriteHolder that records its calls and what the
// ResponseWriter held when Release came.
type recordingHolder struct {
	rec            *httptest.ResponseRecorder
	holds, release int
	atRelease      int // body bytes written when Release was called
}

func (h *recordingHolder) Hold() { h.holds++ }
func (h *recordingHolder) Release() error {
	h.release++
	h.atRelease = h.rec.Body.Len()
	return nil
}

// TestWriteHolder checks that an answer the handler has whole is written
// between Hold and Release (and flushed before Release), the same bytes,
// and that HEAD, small answers and streamed rows are not held.
func TestWriteHolder(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{AnswerCache: -1})
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	for _, c := range []struct {
		method, target string
		held           bool
	}{
		{http.MethodGet, "/api/v1/series/points?ids=" + id, true},
		{http.MethodHead, "/api/v1/series/points?ids=" + id, false},
		{http.MethodGet, "/api/v1/versions", false}, // under 2 KiB: one write anyway
		{http.MethodGet, "/api/v1/datasets/many.lance/rows", false},
	} {
		want := httptest.NewRecorder()
		h.ServeHTTP(want, httptest.NewRequest(c.method, c.target, nil))
		rec := httptest.NewRecorder()
		hold := &recordingHolder{rec: rec}
		req := httptest.NewRequest(c.method, c.target, nil)
		h.ServeHTTP(rec, req.WithContext(WithWriteHolder(req.Context(), hold)))
		if rec.Code != want.Code || rec.Body.String() != want.Body.String() {
			t.Errorf("%s %s: a different answer with a holder", c.method, c.target)
		}
		if got := hold.holds == 1 && hold.release == 1; got != c.held || hold.holds != hold.release {
			t.Errorf("%s %s: %d holds, %d releases (held %v)", c.method, c.target, hold.holds, hold.release, c.held)
		}
		if c.held && (hold.atRelease != want.Body.Len() || !rec.Flushed) {
			t.Errorf("%s %s: released with %d of %d bytes written (flushed %v)", c.method, c.target, hold.atRelease, want.Body.Len(), rec.Flushed)
		}
	}
}
