package tracking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// TestReadCachesFollowOtherHandles changes a repository through two writer
// handles (appends, field updates, rewritten steps, optimize, automatic
// compaction, deletions)
// while two long-lived handles (one writable, one read-only) keep reading
// it through their caches. After every change each cached read must equal
// the same read from a freshly opened handle.
func TestReadCachesFollowOtherHandles(t *testing.T) {
	for i := 0; i < 3; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) { runCacheModel(t, testSeed(t)) })
	}
}

func runCacheModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	st := store.NewMemory()
	open := func(ro bool, maxFrags int) *Repo {
		r, err := OpenRepo(ctx, st, "c", RepoOptions{ReadOnly: ro, FlushRows: 1 + rng.IntN(50), FlushInterval: -1, MaxFragments: maxFrags})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The first writer compacts automatically.
	autoFrags := 2 + rng.IntN(5)
	writers := []*Repo{open(false, autoFrags), open(false, -1)}
	readers := []*Repo{open(false, -1), open(true, -1)}
	defer func() {
		for _, r := range append(writers, readers...) {
			r.Close()
		}
	}()
	handles := map[string]*Run{}
	var live []string
	names := []string{"loss", "acc"}
	for op := 0; op < 120; op++ {
		w := writers[rng.IntN(len(writers))]
		what := ""
		switch k := rng.IntN(100); {
		case k < 10 || len(live) == 0:
			id := fmt.Sprintf("r%03d", op)
			run, err := w.StartRun(ctx, RunSpec{ID: id, Name: id, Tags: []string{"a"}})
			if err != nil {
				t.Fatal(err)
			}
			handles[id] = run
			live = append(live, id)
			what = "start " + id
		case k < 60:
			id := live[rng.IntN(len(live))]
			run := handles[id]
			for n := rng.IntN(30); n >= 0; n-- {
				var o TrackOptions
				if rng.IntN(5) == 0 {
					s := int64(rng.IntN(10)) // a step written again
					o.Step = &s
				}
				if err := run.Track(rng.NormFloat64(), names[rng.IntN(len(names))], o); err != nil {
					t.Fatal(err)
				}
			}
			what = "track " + id
		case k < 70:
			id := live[rng.IntN(len(live))]
			name := fmt.Sprint("n", op)
			if err := w.UpdateRun(ctx, id, RunPatch{Name: &name}); err != nil {
				f := open(true, -1)
				_, ferr := f.Run(ctx, id)
				f.Close()
				t.Fatalf("op %d: %v (fresh handle: %v)", op, err, ferr)
			}
			what = "update " + id
		case k < 78:
			if _, err := w.Optimize(ctx); err != nil {
				t.Fatal(err)
			}
			what = "optimize"
		case k < 84 && len(live) > 1:
			i := rng.IntN(len(live))
			id := live[i]
			if err := w.DeleteRuns(ctx, []string{id}); err != nil {
				f := open(true, -1)
				_, ferr := f.Run(ctx, id)
				f.Close()
				t.Fatalf("op %d: %v (fresh handle: %v)", op, err, ferr)
			}
			live = append(live[:i], live[i+1:]...)
			delete(handles, id)
			what = "delete " + id
		case k < 88:
			// Remove every version but the newest of each table: writers
			// and readers holding older versions must still commit and
			// read correctly.
			for _, tbl := range []string{RunsTable, ParamsTable, SeriesTable, MetricsTable} {
				if _, err := lance.CleanupOldVersions(ctx, st, store.Join("c", tbl), 0, lance.CleanupOptions{}); err != nil && !errors.Is(err, lance.ErrNotFound) {
					t.Fatal(err)
				}
			}
			what = "cleanup"
		default:
			what = "flush"
		}
		// Every change is committed before the reads compare.
		for _, w := range writers {
			if err := w.Flush(ctx); err != nil {
				t.Fatalf("op %d (%s): %v", op, what, err)
			}
		}
		fresh := open(true, -1)
		want := readAll(t, fresh)
		fresh.Close()
		for i, r := range readers {
			if got := readAll(t, r); !reflect.DeepEqual(got, want) {
				t.Fatalf("op %d (%s): reader %d differs from a fresh handle:\n got %+v\nwant %+v", op, what, i, got, want)
			}
		}
	}
}

type readResult struct {
	Runs   []RunInfo
	One    map[string]RunInfo
	Series map[string][]SeriesInfo
	All    map[SeriesID]SeriesStats
	Some   map[SeriesID]SeriesStats
}

func readAll(t *testing.T, r *Repo) readResult {
	t.Helper()
	ctx := context.Background()
	var out readResult
	var err error
	if out.Runs, err = r.Runs(ctx, RunFilter{}); err != nil {
		t.Fatal(err)
	}
	out.One = map[string]RunInfo{}
	out.Series = map[string][]SeriesInfo{}
	var ids []SeriesID
	for _, in := range out.Runs {
		if out.One[in.ID], err = r.Run(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
		if out.Series[in.ID], err = r.AllSeries(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
		for _, s := range out.Series[in.ID] {
			ids = append(ids, s.ID)
		}
	}
	if out.All, err = r.SeriesStats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(ids) > 1 {
		ids = ids[:len(ids)/2]
	}
	if out.Some, err = r.SeriesStats(ctx, ids); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadCacheNoAliasing checks that callers cannot change a handle's
// cached runs through the slices it returns.
func TestReadCacheNoAliasing(t *testing.T) {
	ctx := context.Background()
	r, err := OpenRepo(ctx, store.NewMemory(), "", RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.StartRun(ctx, RunSpec{ID: "a", Tags: []string{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	runs, _ := r.Runs(ctx, RunFilter{})
	runs[0].Tags[0] = "changed"
	runs[0].Name = "changed"
	one, _ := r.Run(ctx, "a")
	one.Tags[1] = "changed"
	series, _ := r.loadSeries(ctx, "")
	_ = append(series, SeriesInfo{RunID: "zzz"})
	again, _ := r.Runs(ctx, RunFilter{})
	if again[0].Tags[0] != "x" || again[0].Tags[1] != "y" || again[0].Name != "" {
		t.Fatalf("cache changed through a result: %+v", again[0])
	}
}

// TestReadCacheAfterCleanup tags the version a reader cached, commits two
// more versions and removes every untagged old one: the version after the
// cached one is gone while the cached one stays. The reader must still see
// the newest data, through the version hint, and without it through the
// periodic listing.
func TestReadCacheAfterCleanup(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w, err := OpenRepo(ctx, st, "c", RepoOptions{FlushInterval: -1, MaxFragments: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd, err := OpenRepo(ctx, st, "c", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for i, dropHint := range []bool{false, true} {
		before, err := rd.Runs(ctx, RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := lance.Open(ctx, st, store.Join("c", RunsTable), lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CreateTag(ctx, fmt.Sprint("t", i), d.Version()); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			if _, err := w.StartRun(ctx, RunSpec{ID: fmt.Sprintf("r%d-%d", i, k)}); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := lance.CleanupOldVersions(ctx, st, store.Join("c", RunsTable), 0, lance.CleanupOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := lance.Open(ctx, st, store.Join("c", RunsTable), lance.OpenOptions{Version: d.Version() + 1}); err == nil {
			t.Fatal("the version after the tagged one survived the cleanup")
		}
		if dropHint {
			if err := st.Delete(ctx, store.Join("c", RunsTable, "_versions", "latest_version_hint.json")); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(time.Minute) // the listing is due after listEvery; the rest is room for load
		for {
			after, err := rd.Runs(ctx, RunFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(after) == len(before)+2 {
				break
			}
			if !dropHint || time.Now().After(deadline) {
				t.Fatalf("drop hint %v: %d runs, want %d", dropHint, len(after), len(before)+2)
			}
			time.Sleep(listEvery / 10)
		}
	}
}
