package tracking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

// stores returns the stores every API test runs on.
func stores(t *testing.T) map[string]store.Store {
	fs, err := fsstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]store.Store{"memory": store.NewMemory(), "fsstore": fs}
}

func TestAPI(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) { testAPI(t, st) })
	}
}

func testAPI(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	a, err := r.StartRun(ctx, RunSpec{Name: "a", Experiment: "e1", Tags: []string{"x", "y"}, Kind: "training", Target: `{"d":1}`})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.StartRun(ctx, RunSpec{Name: "b", Experiment: "e2"})
	if _, err := r.StartRun(ctx, RunSpec{ID: a.ID()}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate id: %v", err)
	}
	_ = a.SetParams(map[string]any{"opt": map[string]any{"lr": 0.01, "name": "adam"}, "amp": true})
	_ = b.SetParams(map[string]any{"opt": map[string]any{"lr": 0.1, "name": "sgd"}, "amp": false})
	_ = a.SetParams(map[string]any{"opt": map[string]any{"lr": 0.02}}) // merges: opt.name stays
	for s := int64(0); s < 1000; s++ {
		ep := s / 100
		_ = a.Track(float64(s), "loss", TrackOptions{Epoch: &ep})
		_ = a.Track(-float64(s), "loss", TrackOptions{Context: map[string]any{"subset": "val"}})
	}
	nan := math.NaN()
	_ = b.Track(nan, "loss")
	_ = b.Track(3, "loss")
	if err := a.Finish(ctx, StatusFailed); err != nil {
		t.Fatal(err)
	}
	// Reads.
	check := func(f RunFilter, want ...string) {
		t.Helper()
		runs, err := r.Runs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, in := range runs {
			got = append(got, in.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Runs(%+v) = %v, want %v", f, got, want)
		}
	}
	check(RunFilter{}, "a", "b")
	check(RunFilter{Experiment: "e2"}, "b")
	check(RunFilter{Status: StatusFailed}, "a")
	check(RunFilter{Tags: []string{"y"}}, "a")
	check(RunFilter{Params: []ParamFilter{{Key: "opt.lr", Op: "<", Value: 0.05}}}, "a")
	check(RunFilter{Params: []ParamFilter{{Key: "opt.name", Op: "=", Value: "sgd"}}}, "b")
	check(RunFilter{Params: []ParamFilter{{Key: "amp", Value: true}}}, "a")
	yes := true
	check(RunFilter{Archived: &yes})
	if err := r.UpdateRun(ctx, b.ID(), RunPatch{Archived: &yes}); err != nil {
		t.Fatal(err)
	}
	check(RunFilter{Archived: &yes}, "b")
	if err := r.UpdateRun(ctx, "nope", RunPatch{Archived: &yes}); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	in, _ := r.Run(ctx, a.ID())
	if in.Kind != "training" || in.Target != `{"d":1}` || in.EndedAt.IsZero() || in.Status != StatusFailed {
		t.Fatalf("run a: %+v", in)
	}
	ps, _ := r.AllParams(ctx, a.ID())
	if *ps["opt.lr"].Num != 0.02 || *ps["opt.name"].Text != "adam" || !*ps["amp"].Flag {
		t.Fatalf("params %v", ps)
	}
	series, _ := r.AllSeries(ctx, a.ID())
	if len(series) != 2 || series[0].Context != `{"subset":"val"}` || series[1].Context != "{}" {
		t.Fatalf("series %+v", series)
	}
	series[0], series[1] = series[1], series[0] // plain loss first
	ids := []SeriesID{series[0].ID, series[1].ID}
	stats, _ := r.SeriesStats(ctx, ids)
	if s := stats[ids[1]]; s.Count != 1000 || s.Min != -999 || s.MinStep != 999 || s.Max != 0 || s.LastValue != -999 {
		t.Fatalf("stats %+v", s)
	}
	bs, _ := r.AllSeries(ctx, b.ID())
	bstats, _ := r.SeriesStats(ctx, []SeriesID{bs[0].ID})
	if s := bstats[bs[0].ID]; s.Count != 2 || s.NonFinite != 1 || s.Min != 3 || s.LastValue != 3 {
		t.Fatalf("stats with NaN %+v", s)
	}
	data, _ := r.ReadMany(ctx, ids, ReadOptions{Steps: &StepRange{From: 100, To: 200}})
	if data[0].Len() != 100 || data[0].Steps[0] != 100 || data[0].Epochs[0] != 1 || data[1].Epochs[0] != NoEpoch {
		t.Fatalf("step range: %d points", data[0].Len())
	}
	all, _ := r.ReadMany(ctx, ids[:1], ReadOptions{})
	tr := TimeRange{From: all[0].Timestamps[10], To: all[0].Timestamps[20]}
	data, _ = r.ReadMany(ctx, ids[:1], ReadOptions{Time: &tr})
	if data[0].Len() == 0 || data[0].Timestamps[0].Before(tr.From) || !data[0].Timestamps[data[0].Len()-1].Before(tr.To) {
		t.Fatalf("time range: %+v", data[0].Steps)
	}
	rec := MetricsRecord(all)
	if rec.NumRows() != 1000 || rec.NumCols() != 5 {
		t.Fatalf("arrow: %d rows", rec.NumRows())
	}
	rec.Release()
	rr := RunsRecord([]RunInfo{in})
	if rr.NumRows() != 1 {
		t.Fatal("runs arrow")
	}
	rr.Release()
	v1, _ := r.LatestVersions(ctx)
	// Records.
	_ = r.PutRecord("evals", a.ID(), "q1", map[string]any{"score": 1})
	_ = r.PutRecord("evals", a.ID(), "q1", map[string]any{"score": 2})
	_ = r.PutRecord("evals", "", "global", 7)
	if err := r.TagRecords(ctx, "evals", "v1"); err != nil {
		t.Fatal(err)
	}
	_ = r.DeleteRecord("evals", a.ID(), "q1")
	if _, err := r.GetRecord(ctx, "evals", a.ID(), "q1"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	old, err := r.ListRecords(ctx, "evals", RecordQuery{Tag: "v1"})
	if err != nil || len(old) != 2 || string(old[1].Data) != `{"score":2}` {
		t.Fatalf("tagged records %+v %v", old, err)
	}
	if tables, _ := r.RecordTables(ctx); fmt.Sprint(tables) != "[evals]" {
		t.Fatalf("tables %v", tables)
	}
	v2, _ := r.LatestVersions(ctx)
	if v2.Records["evals"] == 0 || v1.Runs == 0 {
		t.Fatalf("versions %+v %+v", v1, v2)
	}
	// Optimize keeps every read identical, then more points land unsorted.
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := r.ReadMany(ctx, ids[:1], ReadOptions{})
	if fmt.Sprint(after[0].Values) != fmt.Sprint(all[0].Values) {
		t.Fatal("optimize changed the points")
	}
	run2, err := r.ResumeRun(ctx, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	_ = run2.Track(5000, "loss") // step 1000
	s5 := int64(5)
	_ = run2.Track(-1, "loss", TrackOptions{Step: &s5}) // overwrites step 5: full rewrite next time
	stats, _ = r.SeriesStats(ctx, ids[:1])
	if s := stats[ids[0]]; s.Count != 1001 || s.LastStep != 1000 || s.Min != -1 || s.MinStep != 5 {
		t.Fatalf("after overwrite %+v", s)
	}
	ost, err := r.Optimize(ctx)
	if err != nil || !ost.MetricsFull {
		t.Fatalf("optimize %+v %v", ost, err)
	}
	stats, _ = r.SeriesStats(ctx, ids[:1])
	if s := stats[ids[0]]; s.Count != 1001 || s.Min != -1 {
		t.Fatalf("after optimize %+v", s)
	}
	// Delete and purge.
	if err := r.DeleteRuns(ctx, []string{a.ID()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AllParams(ctx, a.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := r.Purge(ctx, false); !errors.Is(err, ErrTagHoldsDeleted) {
		t.Fatalf("purge with a tag on deleted rows: %v", err)
	}
	if err := r.Purge(ctx, true); err != nil {
		t.Fatal(err)
	}
	d, _ := r.ReadMany(ctx, ids, ReadOptions{})
	if d[0].Len() != 0 {
		t.Fatal("points of a deleted run survive purge")
	}
	check(RunFilter{}, "b")
	// Read-only handle.
	ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.StartRun(ctx, RunSpec{}); !errors.Is(err, ErrReadOnly) {
		t.Fatal(err)
	}
	if runs, _ := ro.Runs(ctx, RunFilter{}); len(runs) != 1 {
		t.Fatal("read-only runs")
	}
	if _, err := OpenRepo(ctx, st, "missing", RepoOptions{ReadOnly: true}); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

// TestDownsample checks the properties of Downsample on random series:
// at most maxPoints indexes, increasing, the first and last kept, and the
// global minimum and maximum (spikes) kept.
func TestDownsample(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	for i := 0; i < 2000; i++ {
		n := rng.IntN(3000)
		vals := make([]float64, n)
		for j := range vals {
			vals[j] = rng.NormFloat64()
		}
		if n > 0 && rng.IntN(2) == 0 {
			vals[rng.IntN(n)] = 1e9 // a spike
		}
		mp := rng.IntN(400)
		sel := Downsample(vals, mp)
		if mp <= 0 || n <= mp {
			if len(sel) != n {
				t.Fatalf("n=%d max=%d: %d points", n, mp, len(sel))
			}
			continue
		}
		if len(sel) > mp {
			t.Fatalf("n=%d max=%d: %d points", n, mp, len(sel))
		}
		for k := 1; k < len(sel); k++ {
			if sel[k] <= sel[k-1] {
				t.Fatalf("not increasing: %v", sel)
			}
		}
		if mp >= 2 && (sel[0] != 0 || sel[len(sel)-1] != n-1) {
			t.Fatalf("first/last lost: %v", sel)
		}
		if mp >= 4 {
			lo, hi := 0, 0
			for j, v := range vals {
				if v < vals[lo] {
					lo = j
				}
				if v > vals[hi] {
					hi = j
				}
			}
			has := func(j int) bool {
				for _, s := range sel {
					if s == j {
						return true
					}
				}
				return false
			}
			if !has(lo) || !has(hi) {
				t.Fatalf("n=%d max=%d: extremes %d,%d not kept", n, mp, lo, hi)
			}
		}
	}
}

// TestConcurrentHandles writes different runs from several handles on one
// folder at once while another handle deletes some of them.
func TestConcurrentHandles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const writers, perWriter, steps = 4, 3, 300
	var wg sync.WaitGroup
	ids := make(chan string, writers*perWriter)
	errs := make(chan error, writers+1)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			st, _ := fsstore.Open(dir)
			r, err := OpenRepo(ctx, st, "", RepoOptions{FlushRows: 97, FlushInterval: 5e6})
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			for k := 0; k < perWriter; k++ {
				run, err := r.StartRun(ctx, RunSpec{Name: fmt.Sprintf("w%d-%d", w, k)})
				if err != nil {
					errs <- err
					return
				}
				ids <- run.ID()
				for s := 0; s < steps; s++ {
					if err := run.Track(float64(s), "loss"); err != nil && !errors.Is(err, ErrNotFound) {
						errs <- err
						return
					}
				}
				_ = run.SetParams(map[string]any{"w": w})
				if err := run.Finish(ctx, ""); err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
			}
		}(w)
	}
	deleted := map[string]bool{}
	var dmu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		st, _ := fsstore.Open(dir)
		r, err := OpenRepo(ctx, st, "", RepoOptions{})
		if err != nil {
			errs <- err
			return
		}
		defer r.Close()
		for i := 0; i < 3; i++ {
			id := <-ids
			// The run may not be committed yet: retry until it is visible.
			for {
				err := r.DeleteRuns(ctx, []string{id})
				if err == nil {
					break
				}
				if !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
			}
			dmu.Lock()
			deleted[id] = true
			dmu.Unlock()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, _ := fsstore.Open(dir)
	r, err := OpenRepo(ctx, st, "", RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before, _ := r.Runs(ctx, RunFilter{})
	t.Logf("%d runs before optimize", len(before))
	if len(before) == 0 {
		log, _ := lance.Log(ctx, st, RunsTable)
		for _, v := range log {
			t.Logf("%+v", v)
		}
	}
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	runs, err := r.Runs(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != writers*perWriter-len(deleted) {
		t.Fatalf("%d runs, want %d", len(runs), writers*perWriter-len(deleted))
	}
	for _, in := range runs {
		if deleted[in.ID] {
			t.Fatalf("deleted run %s is back", in.ID)
		}
		series, _ := r.AllSeries(ctx, in.ID)
		stats, _ := r.SeriesStats(ctx, []SeriesID{series[0].ID})
		if s := stats[series[0].ID]; s.Count != steps || s.LastValue != steps-1 {
			t.Fatalf("run %s: %+v", in.Name, s)
		}
	}
	// Nothing of a deleted run remains after Optimize.
	for id := range deleted {
		sid, _ := NewSeriesID(id, "loss", nil)
		d, _ := r.ReadMany(ctx, []SeriesID{sid}, ReadOptions{})
		if d[0].Len() != 0 {
			t.Fatalf("deleted run %s keeps %d points", id, d[0].Len())
		}
	}
}

// memWAL is an in-memory kv.WAL whose contents survive a simulated crash
// (a handle dropped without Close).
type memWAL struct {
	mu      sync.Mutex
	id      string
	recs    [][]byte
	claimed []kv.ClaimedLog
}

func (w *memWAL) WriterID() string         { return w.id }
func (w *memWAL) Claimed() []kv.ClaimedLog { return w.claimed }
func (w *memWAL) ReleaseClaimed() error    { w.claimed = nil; return nil }
func (w *memWAL) Sync() error              { return nil }
func (w *memWAL) Rotate() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return uint64(len(w.recs)), nil
}
func (w *memWAL) Close(clean bool) error { return nil }
func (w *memWAL) Release(token uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = w.recs[token:]
	return nil
}
func (w *memWAL) Append(rec []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, append([]byte(nil), rec...))
	return nil
}

// TestWALReplay crashes a writer (drops it without Close) after some
// flushes, with and without a failing commit in the middle of a flush,
// and checks that a new handle replays the log into exactly what was not
// committed: nothing lost, nothing twice.
func TestWALReplay(t *testing.T) {
	for _, failAt := range []string{"", "params.lance", "series.lance", "metrics.lance"} {
		t.Run("fail="+failAt, func(t *testing.T) {
			ctx := context.Background()
			mem := store.NewMemory()
			fst := &failStore{Store: mem}
			w := &memWAL{id: "w1"}
			r, err := OpenRepo(ctx, fst, "", RepoOptions{FlushInterval: -1, WAL: w})
			if err != nil {
				t.Fatal(err)
			}
			run, _ := r.StartRun(ctx, RunSpec{ID: "r1"})
			for s := 0; s < 100; s++ {
				_ = run.Track(float64(s), "loss")
			}
			_ = run.SetParams(map[string]any{"a": 1})
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for s := 100; s < 250; s++ {
				_ = run.Track(float64(s), "loss")
			}
			_ = run.Track(1, "acc")
			_ = run.SetParams(map[string]any{"b": 2})
			if failAt != "" {
				fst.failPrefix = failAt
				if err := r.Flush(ctx); err == nil {
					t.Fatal("flush did not fail")
				}
			}
			// Crash: the handle is abandoned; its WAL is claimed by the next one.
			r.mu.Lock()
			_ = r.walWritePending()
			r.mu.Unlock()
			close(r.stop)
			w2 := &memWAL{id: "w2", claimed: []kv.ClaimedLog{{WriterID: "w1", Records: w.recs}}}
			r2, err := OpenRepo(ctx, mem, "", RepoOptions{FlushInterval: -1, WAL: w2})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			sid, _ := NewSeriesID("r1", "loss", nil)
			d, _ := r2.ReadMany(ctx, []SeriesID{sid}, ReadOptions{})
			if d[0].Len() != 250 {
				t.Fatalf("%d points after replay, want 250", d[0].Len())
			}
			st, _ := r2.SeriesStats(ctx, []SeriesID{sid})
			if st[sid].Count != 250 || st[sid].LastValue != 249 {
				t.Fatalf("stats after replay %+v", st[sid])
			}
			ps, _ := r2.AllParams(ctx, "r1")
			if len(ps) != 2 {
				t.Fatalf("params %v", ps)
			}
			series, _ := r2.AllSeries(ctx, "r1")
			if len(series) != 2 {
				t.Fatalf("series %v", series)
			}
			// Raw rows: nothing committed twice.
			md, _ := r2.latest(ctx, MetricsTable)
			n, _ := md.CountRows(ctx)
			if _, err := r2.Optimize(ctx); err != nil {
				t.Fatal(err)
			}
			st, _ = r2.SeriesStats(ctx, []SeriesID{sid})
			if st[sid].Count != 250 {
				t.Fatalf("exact stats after optimize %+v (rows before: %d)", st[sid], n)
			}
		})
	}
}

// failStore fails writes under failPrefix.
type failStore struct {
	store.Store
	failPrefix string
}

func (f *failStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if f.failPrefix != "" && len(key) >= len(f.failPrefix) && key[:len(f.failPrefix)] == f.failPrefix {
		return errors.New("injected failure")
	}
	return f.Store.PutIfAbsent(ctx, key, data)
}

func (f *failStore) Put(ctx context.Context, key string, data []byte) error {
	if f.failPrefix != "" && len(key) >= len(f.failPrefix) && key[:len(f.failPrefix)] == f.failPrefix {
		return errors.New("injected failure")
	}
	return f.Store.Put(ctx, key, data)
}

// TestDownsampleExtremes: the same points as Downsample, and each point's
// band is its bucket's extremes: it holds the point, is made of chosen
// points' values, and the bands together span the series' range (from 4
// points on; fewer keep only the first and the last).
func TestDownsampleExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for i := 0; i < 2000; i++ {
		n := rng.IntN(2000)
		vals := make([]float64, n)
		for j := range vals {
			vals[j] = rng.NormFloat64()
		}
		mp := rng.IntN(300)
		sel, mins, maxs := DownsampleExtremes(vals, mp, true)
		if !slices.Equal(sel, Downsample(vals, mp)) {
			t.Fatalf("n=%d max=%d: other points than Downsample", n, mp)
		}
		if len(mins) != len(sel) || len(maxs) != len(sel) {
			t.Fatalf("n=%d max=%d: %d points, %d mins, %d maxs", n, mp, len(sel), len(mins), len(maxs))
		}
		chosen := map[float64]bool{}
		for _, s := range sel {
			chosen[vals[s]] = true
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for k, s := range sel {
			if mins[k] > vals[s] || maxs[k] < vals[s] || !chosen[mins[k]] || !chosen[maxs[k]] {
				t.Fatalf("n=%d max=%d: point %d (%v) has band [%v, %v]", n, mp, s, vals[s], mins[k], maxs[k])
			}
			lo, hi = min(lo, mins[k]), max(hi, maxs[k])
		}
		for _, v := range vals {
			if mp >= 4 && (v < lo || v > hi) { // below 4 points there are no buckets
				t.Fatalf("n=%d max=%d: %v outside the bands [%v, %v]", n, mp, v, lo, hi)
			}
		}
		if _, m2, _ := DownsampleExtremes(vals, mp, false); m2 != nil {
			t.Fatal("extremes without asking")
		}
	}
}
