package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/store"
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
// listing store, and finding the four tables' latest versions reads each
// hint and each manifest once (the versions for the ETag and the
// repository's own reads share them), before the answer is sent.
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
	}
	if hints != 4 {
		t.Errorf("%d reads of hints, want 4 (one per table)", hints)
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
