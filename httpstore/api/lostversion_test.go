package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// rewriteStore runs rewrite right before a read of the objects match
// selects, the next times times, as a cleanup or purge running under a
// live reader would: that read, and the others of those objects under way
// (which wait for the rewrite), then find their version gone.
type rewriteStore struct {
	store.Store
	match   func(key string) bool
	times   atomic.Int32 // rewrites still to run
	ran     atomic.Int32 // rewrites run
	rewrite func()
	mu      sync.RWMutex
}

func (s *rewriteStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if s.match(key) {
		if s.times.Add(-1) >= 0 {
			s.mu.Lock()
			s.rewrite()
			s.ran.Add(1)
			s.mu.Unlock()
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
	}
	return s.Store.ReadAt(ctx, key, p, off)
}

// dataOf selects the data files of the dataset at root.
func dataOf(root string) func(string) bool {
	return func(key string) bool { return strings.HasPrefix(key, root+"/data/") }
}

// purgeDataset rewrites the dataset at root as a forced purge would: its
// tags deleted, a new version whose fragments are new files (a row
// appended, then everything compacted), and every older version removed
// with the files only they named.
func purgeDataset(t *testing.T, st store.Store, root string) {
	t.Helper()
	ctx := context.Background()
	d, err := lance.Open(ctx, st, root, lance.OpenOptions{})
	var tags []lance.Tag
	if err == nil {
		tags, err = d.ListTags(ctx)
	}
	for _, tag := range tags {
		if err == nil {
			err = d.DeleteTag(ctx, tag.Name)
		}
	}
	if err == nil {
		d, err = d.Append(ctx, lance.Batches(batch(1000, 1)), lance.WriteOptions{})
	}
	if err == nil {
		_, _, err = d.Compact(ctx, lance.CompactOptions{})
	}
	if err == nil {
		_, err = lance.CleanupOldVersions(ctx, st, root, 0, lance.CleanupOptions{})
	}
	if err != nil {
		t.Error(err) // not Fatal: it runs in the handler's goroutine
	}
}

// purgeRun deletes a run of the repository and purges it (kv0 purge):
// every table compacted, their older versions removed.
func purgeRun(t *testing.T, st store.Store) {
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Error(err)
		return
	}
	defer r.Close()
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err == nil {
		err = r.DeleteRuns(ctx, []string{runs[0].ID})
	}
	if err == nil {
		err = r.Purge(ctx, true)
	}
	if err != nil {
		t.Error(err)
	}
}

// TestLostVersionIsRetried: a cleanup that removes the version a request
// is reading, between the manifest read and the data read, is answered
// from the newest version (an explicit version that is gone: 404), and a
// request that loses its version twice gets 503 with Retry-After; never
// 422 Corrupt.
func TestLostVersionIsRetried(t *testing.T) {
	for _, c := range []struct {
		name, target string
		times        int32
		root         string
		match        func(string) bool
		rewrite      func(t *testing.T, st store.Store)
		wantCode     int
		wantErr      string // the error code, and a part of its message
		wantMsg      string
	}{
		{name: "latest rows", target: "/api/v1/datasets/t.lance/rows", times: 1, match: dataOf("t.lance"),
			rewrite: func(t *testing.T, st store.Store) { purgeDataset(t, st, "t.lance") }, wantCode: 200},
		{name: "arrow rows", target: "/api/v1/datasets/many.lance/rows?format=arrow&limit=10", times: 1, match: dataOf("many.lance"),
			rewrite: func(t *testing.T, st store.Store) { purgeDataset(t, st, "many.lance") }, wantCode: 200},
		{name: "explicit version", target: "/api/v1/datasets/t.lance/rows?version=2", times: 1, match: dataOf("t.lance"),
			rewrite:  func(t *testing.T, st store.Store) { purgeDataset(t, st, "t.lance") },
			wantCode: 404, wantErr: CodeNotFound, wantMsg: "version 2"},
		{name: "lost twice", target: "/api/v1/datasets/t.lance/rows", times: 2, match: dataOf("t.lance"),
			rewrite:  func(t *testing.T, st store.Store) { purgeDataset(t, st, "t.lance") },
			wantCode: 503, wantErr: CodeUnavailable, wantMsg: "retry"},
		{name: "log", target: "/api/v1/datasets/t.lance/log", times: 1,
			match: func(key string) bool {
				return strings.HasPrefix(key, "t.lance/_versions/") && strings.HasSuffix(key, ".manifest")
			},
			rewrite: func(t *testing.T, st store.Store) { purgeDataset(t, st, "t.lance") }, wantCode: 200},
		{name: "runs", target: "/api/v1/runs", times: 1, match: dataOf(tracking.RunsTable), rewrite: purgeRun, wantCode: 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			rs := &rewriteStore{Store: f.st, match: c.match, rewrite: func() { c.rewrite(t, f.st) }}
			h := New(rs, "", Options{Logf: t.Logf})
			defer h.Close()
			if c.name == "log" {
				// Warm: the handler holds the latest version, and the
				// log's reads of older manifests are what a cleanup races.
				if w := get(t, h, "/api/v1/datasets/t.lance/rows"); w.Code != 200 {
					t.Fatalf("warm-up: %d %s", w.Code, w.Body)
				}
			}
			rs.times.Store(c.times)
			w := get(t, h, c.target)
			if n := rs.ran.Load(); n != c.times {
				t.Fatalf("the rewrite ran %d times, want %d", n, c.times)
			}
			if w.Code != c.wantCode {
				t.Fatalf("%s: %d %s, want %d", c.target, w.Code, w.Body, c.wantCode)
			}
			if c.wantErr != "" {
				e := errorOf(t, w)
				if e.Error.Code != c.wantErr || !strings.Contains(e.Error.Message, c.wantMsg) {
					t.Fatalf("%s: %+v, want code %s and a message naming %q", c.target, e.Error, c.wantErr, c.wantMsg)
				}
				if ra := w.Header().Get("Retry-After"); (c.wantCode == 503) != (ra != "") {
					t.Fatalf("%s: %d with Retry-After %q", c.target, w.Code, ra)
				}
				return
			}
			// The answer is the newest version's, as a handler that never
			// saw the old one answers it.
			want := get(t, New(f.st, "", Options{}), c.target)
			if c.name == "log" {
				var got, fresh []struct {
					Version uint64 `json:"version"`
				}
				if json.Unmarshal(w.Body.Bytes(), &got) != nil || json.Unmarshal(want.Body.Bytes(), &fresh) != nil || len(got) == 0 ||
					got[len(got)-1].Version != fresh[len(fresh)-1].Version {
					t.Fatalf("log under a cleanup: %s\nafter it: %s", w.Body, want.Body)
				}
				return
			}
			if w.Body.String() != want.Body.String() {
				t.Fatalf("%s: %.300s\nwant the newest version's %.300s", c.target, w.Body, want.Body)
			}
		})
	}
}

// TestLostVersionOfPoints: the points of a series read while a cleanup
// removes the metrics version they come from are the newest version's.
func TestLostVersionOfPoints(t *testing.T) {
	f := newFixture(t)
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	target := "/api/v1/series/points?ids=" + id + "&max_points=50"
	rs := &rewriteStore{Store: f.st, match: dataOf(tracking.MetricsTable), rewrite: func() {
		// A new run, then Optimize (the metrics rewritten into new
		// files) and a cleanup of the older versions. Not t.Fatal: this
		// runs in the handler's goroutine.
		ctx := context.Background()
		r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
		if err != nil {
			t.Error(err)
			return
		}
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: "late"})
		if err == nil {
			err = run.Track(1, "loss")
		}
		if err == nil {
			err = run.Finish(ctx, tracking.StatusFinished)
		}
		if err == nil {
			_, err = r.Optimize(ctx)
		}
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			_, err = lance.CleanupOldVersions(ctx, f.st, tracking.MetricsTable, 0, lance.CleanupOptions{})
		}
		if err != nil {
			t.Error(err)
		}
	}}
	h := New(rs, "", Options{})
	defer h.Close()
	if w := get(t, h, "/api/v1/runs"); w.Code != 200 { // the repository opened, its runs read
		t.Fatalf("/api/v1/runs: %d %s", w.Code, w.Body)
	}
	rs.times.Store(1)
	w := get(t, h, target)
	if rs.ran.Load() != 1 {
		t.Fatalf("the rewrite ran %d times, want 1", rs.ran.Load())
	}
	want := get(t, New(f.st, "", Options{}), target)
	if w.Code != http.StatusOK || w.Body.String() != want.Body.String() {
		t.Fatalf("%s: %d %.300s\nwant %d %.300s", target, w.Code, w.Body, want.Code, want.Body)
	}
}
