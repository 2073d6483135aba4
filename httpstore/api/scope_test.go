package api

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// keyCounter counts the calls per key of a store that cannot list.
type keyCounter struct {
	noListStore
	mu    sync.Mutex
	calls map[string]int
}

func newKeyCounter(st store.Store) *keyCounter {
	return &keyCounter{noListStore: noListStore{st}, calls: map[string]int{}}
}

func (c *keyCounter) count(op, key string) {
	c.mu.Lock()
	c.calls[op+" "+key]++
	c.mu.Unlock()
}

func (c *keyCounter) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	c.count("read", key)
	return c.noListStore.ReadAt(ctx, key, p, off)
}

func (c *keyCounter) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	c.count("stat", key)
	return c.noListStore.Stat(ctx, key)
}

// repeated lists the calls about versions (hints, manifests) made more
// than once.
func (c *keyCounter) repeated() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, n := range c.calls {
		if n > 1 && strings.Contains(k, "/_versions/") {
			out = append(out, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return out
}

// TestColdPointsStatic checks a first points request on a store that
// cannot list: the answer and its ETag are those of a handler on the
// listing store, and finding the latest versions of the three tables a
// series' points follow from reads each hint and each manifest once (the
// versions for the ETag and the repository's own reads share them),
// before the answer is sent; the params table is not read at all.
func TestColdPointsStatic(t *testing.T) {
	f := newFixture(t)
	target := "/api/v1/series/points?ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	ref := New(f.st, "", Options{})
	defer ref.Close()
	want := get(t, ref, target)
	if want.Code != 200 {
		t.Fatalf("%d %s", want.Code, want.Body)
	}
	kc := newKeyCounter(f.st)
	h := New(kc, "", Options{AnswerCache: -1}) // no check of the versions after the answer
	defer h.Close()
	w := get(t, h, target)
	if w.Code != 200 || w.Body.String() != want.Body.String() || w.Header().Get("ETag") != want.Header().Get("ETag") {
		t.Fatalf("static: %d %s %q, want %s %q", w.Code, w.Body, w.Header().Get("ETag"), want.Body, want.Header().Get("ETag"))
	}
	hints := 0
	for k, n := range kc.calls {
		if strings.HasPrefix(k, "read ") && strings.HasSuffix(k, "latest_version_hint.json") {
			hints += n
		}
		if strings.Contains(k, tracking.ParamsTable) {
			t.Errorf("the points read touched the params table: %s ×%d", k, n)
		}
	}
	if hints != 3 {
		t.Errorf("%d reads of hints, want 3 (one per table of runs, series and metrics)", hints)
	}
	if r := kc.repeated(); len(r) > 0 {
		t.Errorf("objects read more than once: %v", r)
	}
}

// TestColdPointsHintBehind checks the speculation's failure: when a
// table's hint names an older version than its latest (the writer had not
// updated it yet), a first request on a store that cannot list still
// answers about the latest versions, as a handler on the listing store
// does.
func TestColdPointsHintBehind(t *testing.T) {
	f := newFixture(t)
	trackPoint(t, f.st, f.runIDs[0], 7777, 0.25)
	ctx := context.Background()
	hint := "metrics.lance/_versions/latest_version_hint.json"
	b, err := store.ReadAll(ctx, f.st, hint)
	if err != nil {
		t.Fatal(err)
	}
	var v uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), `{"version":%d}`, &v); err != nil || v < 2 {
		t.Fatalf("hint %q: %v", b, err)
	}
	if err := f.st.Put(ctx, hint, fmt.Appendf(nil, `{"version":%d}`, v-1)); err != nil {
		t.Fatal(err)
	}
	target := "/api/v1/series/points?max_points=0&ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	ref := New(f.st, "", Options{})
	defer ref.Close()
	want := get(t, ref, target)
	if want.Code != 200 || !strings.Contains(want.Body.String(), ",7777]") {
		t.Fatalf("listing store: %d %.300s", want.Code, want.Body)
	}
	for _, opts := range []Options{{}, {VersionTTL: 1 << 40}, {AnswerCache: -1}} {
		h := New(noListStore{f.st}, "", opts)
		for i := 0; i < 2; i++ {
			w := get(t, h, target)
			if w.Code != 200 || w.Body.String() != want.Body.String() || w.Header().Get("ETag") != want.Header().Get("ETag") {
				t.Errorf("%+v, request %d: %d %.300s %q, want %q", opts, i, w.Code, w.Body, w.Header().Get("ETag"), want.Header().Get("ETag"))
			}
		}
		h.Close()
	}
}

// latencyStore adds a delay to every call of a memory store and records
// when each ran, as a remote store would: a static origin (list false:
// no listing) or a bucket that lists.
type latencyStore struct {
	m     *store.Memory
	delay time.Duration
	list  bool
	mu    sync.Mutex
	spans []span
}

type span struct {
	start, end time.Time
	what       string
}

func (s *latencyStore) call(what string, f func() error) error {
	sp := span{start: time.Now(), what: what}
	time.Sleep(s.delay)
	err := f()
	sp.end = time.Now()
	s.mu.Lock()
	s.spans = append(s.spans, sp)
	s.mu.Unlock()
	return err
}

func (s *latencyStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	return s.call("read "+key, func() error { return s.m.ReadAt(ctx, key, p, off) })
}

func (s *latencyStore) ReadTail(ctx context.Context, key string, n int) (b []byte, size int64, err error) {
	err = s.call("tail "+key, func() error { b, size, err = s.m.ReadTail(ctx, key, n); return err })
	return b, size, err
}

func (s *latencyStore) Stat(ctx context.Context, key string) (info store.ObjectInfo, err error) {
	err = s.call("stat "+key, func() error { info, err = s.m.Stat(ctx, key); return err })
	return info, err
}

func (s *latencyStore) List(ctx context.Context, opts store.ListOptions) (objs []store.ObjectInfo, err error) {
	if !s.list {
		return nil, fmt.Errorf("listing %q: %w", opts.Prefix, store.ErrNotSupported)
	}
	err = s.call("list "+opts.Prefix, func() error { objs, err = s.m.List(ctx, opts); return err })
	return objs, err
}

func (s *latencyStore) PutIfAbsent(ctx context.Context, key string, b []byte) error {
	return s.m.PutIfAbsent(ctx, key, b)
}
func (s *latencyStore) Put(ctx context.Context, key string, b []byte) error {
	return s.m.Put(ctx, key, b)
}
func (s *latencyStore) Delete(ctx context.Context, key string) error { return s.m.Delete(ctx, key) }

// waves is the longest chain of calls each made after the previous one
// ended: the dependent round trips.
func (s *latencyStore) waves() int {
	most := 0
	for _, w := range s.waveOf() {
		most = max(most, w)
	}
	return most
}

// waveOf maps each call (its what) to its dependent round trip: 1 plus the
// deepest of the calls that ended before it started.
func (s *latencyStore) waveOf() map[string]int {
	s.mu.Lock()
	sp := slices.Clone(s.spans)
	s.mu.Unlock()
	slices.SortFunc(sp, func(a, b span) int { return a.start.Compare(b.start) })
	depth := make([]int, len(sp))
	out := map[string]int{}
	for i := range sp {
		depth[i] = 1
		for j := 0; j < i; j++ {
			if !sp[j].end.After(sp[i].start) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		out[sp[i].what] = max(out[sp[i].what], depth[i])
	}
	if testing.Verbose() {
		for i := range sp {
			fmt.Printf("  w%d %s\n", depth[i], sp[i].what)
		}
	}
	return out
}

// TestColdPointsWaves counts the dependent round trips of a first points
// request (a fresh handler) with 50 ms added to every store call: four on
// a store that cannot list (the hints of the runs, series and metrics
// tables; their manifests with the next versions' probes; the data file's
// footer and the runs and series tables' files; the pages) and on one
// that lists (a listing per table instead of the
// hint and the probes).
func TestColdPointsWaves(t *testing.T) {
	if testing.Short() {
		t.Skip("timed")
	}
	f := newFixture(t)
	// Optimized, as the benchmark's repository: the points of a series in
	// one sorted fragment (the tracking layer reads a series' fragments one
	// after another).
	r, err := tracking.OpenRepo(t.Context(), f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Optimize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	target := "/api/v1/series/points?ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	for _, list := range []bool{false, true} {
		// 50 ms, as the benchmark: a goroutine the machine starts late must
		// not look like a request that waited for another.
		ls := &latencyStore{m: f.st, delay: 50 * time.Millisecond, list: list}
		h := New(ls, "", Options{AnswerCache: -1})
		w := get(t, h, target)
		h.Close()
		if w.Code != 200 {
			t.Fatalf("list=%v: %d %s", list, w.Code, w.Body)
		}
		n := ls.waves()
		t.Logf("list=%v: %d calls in %d dependent round trips", list, len(ls.spans), n)
		if n > 4 {
			t.Errorf("list=%v: %d dependent round trips, want at most 4", list, n)
		}
		// The next versions' probes go with the manifests, not after them.
		for what, w := range ls.waveOf() {
			if strings.HasPrefix(what, "stat ") && strings.HasSuffix(what, ".manifest") && w > 2 {
				t.Errorf("list=%v: %s in round trip %d, want 2 (beside the manifest it confirms)", list, what, w)
			}
		}
	}
}

// TestSpeculationAndVersionTTL checks that a version a speculative request
// took is trusted for Options.VersionTTL only once the request confirmed
// it: a points request on a store that cannot list leaves its versions
// confirmed, so the next one within the TTL reaches no store; versions
// read in a speculative scope that was never confirmed are not trusted.
func TestSpeculationAndVersionTTL(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: noListStore{f.st}}
	h := New(cs, "", Options{VersionTTL: time.Hour})
	defer h.Close()
	target := "/api/v1/series/points?ids=" + strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	if w := get(t, h, target); w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	before := cs.calls.Load()
	if w := get(t, h, target); w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if n := cs.calls.Load() - before; n != 0 {
		t.Errorf("a request within the TTL after a confirmed one made %d store calls", n)
	}

	h2 := New(noListStore{f.st}, "", Options{VersionTTL: time.Hour})
	defer h2.Close()
	ctx := lance.WithLatestScope(t.Context(), lance.ScopeOptions{Speculative: true})
	v, err := h2.versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := store.Join(h2.root, tracking.MetricsTable)
	if c := h2.follow[key].checked; !c.IsZero() {
		t.Fatalf("a speculative version counts as confirmed at %v", c)
	}
	if ok, err := lance.ConfirmScope(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	at := time.Now()
	h2.confirmFollowed(v, at)
	if c := h2.follow[key].checked; !c.Equal(at) {
		t.Fatalf("confirmed at %v, want %v", c, at)
	}
}

// TestColdNewSeriesHintBehind checks a speculation whose stale version
// makes the answer an error: a series created by a commit that the
// series table's hint does not name yet is found, not a 404.
func TestColdNewSeriesHintBehind(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := r.ResumeRun(ctx, f.runIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	step := int64(1)
	if err := rn.Track(0.5, "fresh", tracking.TrackOptions{Step: &step}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"series.lance", "metrics.lance"} {
		hint := table + "/_versions/latest_version_hint.json"
		b, err := store.ReadAll(ctx, f.st, hint)
		if err != nil {
			t.Fatal(err)
		}
		var v uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), `{"version":%d}`, &v); err != nil || v < 2 {
			t.Fatalf("hint %q: %v", b, err)
		}
		if err := f.st.Put(ctx, hint, fmt.Appendf(nil, `{"version":%d}`, v-1)); err != nil {
			t.Fatal(err)
		}
	}
	ref := New(f.st, "", Options{})
	defer ref.Close()
	w := get(t, ref, "/api/v1/runs/"+f.runIDs[0]+"/series")
	var series []struct {
		ID   string `json:"series_id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &series); err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, s := range series {
		if s.Name == "fresh" {
			id = s.ID
		}
	}
	if id == "" {
		t.Fatalf("no series fresh: %s", w.Body)
	}
	target := "/api/v1/series/points?ids=" + id
	want := get(t, ref, target)
	if want.Code != 200 {
		t.Fatalf("listing store: %d %s", want.Code, want.Body)
	}
	h := New(noListStore{f.st}, "", Options{})
	defer h.Close()
	if got := get(t, h, target); got.Code != 200 || got.Body.String() != want.Body.String() {
		t.Fatalf("static store: %d %s, want %s", got.Code, got.Body, want.Body)
	}
}
