package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// repoOn opens a repository in st; tests run it on memory and fsstore.
func openTest(t *testing.T, st store.Store, opts RepoOptions) *Repo {
	t.Helper()
	r, err := OpenRepo(context.Background(), st, "repo", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{})
	run, err := r.StartRun(ctx, RunSpec{Name: "a", Experiment: "e", Tags: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := run.Track(float64(i), "loss"); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.SetParams(map[string]any{"optimizer": map[string]any{"lr": 0.1, "name": "adam"}, "bs": 32}); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	runs, err := r.Runs(ctx, RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].Status != StatusFinished || runs[0].Name != "a" {
		t.Fatalf("runs %+v %v", runs, err)
	}
	// A status filter no run can match is refused, not an empty answer.
	if runs, err := r.Runs(ctx, RunFilter{Status: "done"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("status done: %v %v", runs, err)
	}
	ps, err := r.AllParams(ctx, run.ID())
	if err != nil || len(ps) != 3 || *ps["optimizer.lr"].Num != 0.1 {
		t.Fatalf("params %v %v", ps, err)
	}
	ss, err := r.AllSeries(ctx, run.ID())
	if err != nil || len(ss) != 1 {
		t.Fatalf("series %v %v", ss, err)
	}
	st, err := r.SeriesStats(ctx, []SeriesID{ss[0].ID})
	if err != nil || st[ss[0].ID].Count != 100 || st[ss[0].ID].LastValue != 99 || st[ss[0].ID].Max != 99 {
		t.Fatalf("stats %+v %v", st, err)
	}
	md, err := r.ReadMany(ctx, []SeriesID{ss[0].ID}, ReadOptions{MaxPoints: 10})
	if err != nil || md[0].Len() > 10 || md[0].Steps[0] != 0 || md[0].Steps[md[0].Len()-1] != 99 {
		t.Fatalf("read %+v %v", md, err)
	}
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	md, err = r.ReadMany(ctx, []SeriesID{ss[0].ID}, ReadOptions{})
	if err != nil || md[0].Len() != 100 {
		t.Fatalf("read after optimize %d %v", md[0].Len(), err)
	}
	st, err = r.SeriesStats(ctx, nil)
	if err != nil || st[ss[0].ID].Count != 100 || math.IsNaN(st[ss[0].ID].Min) {
		t.Fatalf("stats %+v %v", st, err)
	}
	if err := r.DeleteRuns(ctx, []string{run.ID()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, run.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := run.Track(1, "loss"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

// A step written twice in a row lands in one batch of one fragment, the
// two rows next to each other: reads keep the later one, before and after
// Optimize, with and without downsampling.
func TestStepWrittenTwiceInARow(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	run, err := r.StartRun(ctx, RunSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Steps 1..10 with the value of the step, step 5 first written as -100:
	// kept, that stale point would be the series' minimum.
	track := func(s int64, v float64) {
		if err := run.Track(v, "loss", TrackOptions{Step: &s}); err != nil {
			t.Fatal(err)
		}
	}
	for s := int64(1); s <= 10; s++ {
		if s == 5 {
			track(5, -100)
		}
		track(s, float64(s))
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ss, err := r.AllSeries(ctx, run.ID())
	if err != nil || len(ss) != 1 {
		t.Fatalf("series %v %v", ss, err)
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			max   int
			steps []int64
			vals  []float64
		}{
			{0, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			// The first and the last, and the one bucket's extremes.
			{4, []int64{1, 2, 9, 10}, []float64{1, 2, 9, 10}},
		} {
			md, err := r.ReadMany(ctx, []SeriesID{ss[0].ID}, ReadOptions{MaxPoints: c.max})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(md[0].Steps, c.steps) || !slices.Equal(md[0].Values, c.vals) {
				t.Errorf("%s, maxPoints %d: steps %v values %v, want %v %v", when, c.max, md[0].Steps, md[0].Values, c.steps, c.vals)
			}
		}
	}
	check("unsorted")
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check("after Optimize")
}

// Tracks racing Close: every Track that returned nil is committed by Close
// (the handle refuses writes from the moment Close starts, so none lands
// between its flush and its end).
func TestTrackRacingClose(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		st := store.NewMemory()
		r, err := OpenRepo(ctx, st, "repo", RepoOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		run, err := r.StartRun(ctx, RunSpec{Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		const writers = 4
		acked := make([]int, writers)
		var wg sync.WaitGroup
		started := make(chan struct{}, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprint("m", w)
				for i := 0; ; i++ {
					if i == 10 {
						started <- struct{}{}
					}
					if err := run.Track(float64(i), name); err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Errorf("writer %d: %v", w, err)
						}
						return
					}
					acked[w]++
				}
			}()
		}
		for range writers {
			<-started
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		r2 := openTest(t, st, RepoOptions{ReadOnly: true})
		ss, err := r2.AllSeries(ctx, run.ID())
		if err != nil || len(ss) != writers {
			t.Fatalf("round %d: series %v %v", round, ss, err)
		}
		for _, s := range ss {
			var w int
			fmt.Sscanf(s.Name, "m%d", &w)
			md, err := r2.ReadMany(ctx, []SeriesID{s.ID}, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if md[0].Len() != acked[w] {
				t.Fatalf("round %d: %s holds %d points, %d Track calls returned nil", round, s.Name, md[0].Len(), acked[w])
			}
		}
	}
}

// A status outside the four, a finish as "running" and a default step
// past the largest int64 are ErrInvalid, and change nothing.
func TestRunWritesRejected(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	run, err := r.StartRun(ctx, RunSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	bogus := "bogus"
	if err := run.Update(RunPatch{Status: &bogus}); !errors.Is(err, ErrInvalid) {
		t.Errorf("status %q: %v, want ErrInvalid", bogus, err)
	}
	if err := run.Finish(ctx, "weird"); !errors.Is(err, ErrInvalid) {
		t.Errorf("finish as weird: %v, want ErrInvalid", err)
	}
	if err := run.Finish(ctx, StatusRunning); !errors.Is(err, ErrInvalid) {
		t.Errorf("finish as running: %v, want ErrInvalid", err)
	}
	in, err := r.Run(ctx, run.ID())
	if err != nil || in.Status != StatusRunning || !in.EndedAt.IsZero() {
		t.Fatalf("after the rejected changes: %+v %v", in, err)
	}
	last := int64(math.MaxInt64)
	if err := run.Track(1, "loss", TrackOptions{Step: &last}); err != nil {
		t.Fatal(err)
	}
	if err := run.Track(2, "loss"); !errors.Is(err, ErrInvalid) {
		t.Errorf("the step after %d: %v, want ErrInvalid", last, err)
	}
	for _, s := range []string{StatusFinished, StatusFailed, StatusAborted} {
		if err := run.Update(RunPatch{Status: &s}); err != nil {
			t.Errorf("status %q: %v", s, err)
		}
	}
}

// Parameters read from JSON through Params keep their numbers exactly,
// integers above 2^53 too; the num column holds their float64.
func TestParamsKeepNumbersExact(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	run, err := r.StartRun(ctx, RunSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var p Params
	if err := json.Unmarshal([]byte(`{"seed": 1152921504606846977, "opt": {"ids": [1, 12345678901234567891], "lr": 0.001}}`), &p); err != nil {
		t.Fatal(err)
	}
	if err := run.SetParams(p); err != nil {
		t.Fatal(err)
	}
	ps, err := r.AllParams(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"seed": "1152921504606846977", "opt.ids": "[1,12345678901234567891]", "opt.lr": "0.001"} {
		if got := string(ps[k].Value); got != want {
			t.Errorf("%s: %s, want %s", k, got, want)
		}
	}
	if n := ps["seed"].Num; n == nil || *n != 1152921504606846977 {
		t.Errorf("seed's num: %v", n)
	}
	var none Params
	if err := json.Unmarshal([]byte(`null`), &none); err != nil || none != nil {
		t.Errorf("null: %v %v", none, err)
	}
}

// TrackMany stores what the same points through Track would (steps given
// or consecutive, repeated and out-of-order steps, runs longer than a WAL
// chunk), logs each chunk as one WAL record, and on a failed log write
// tracks exactly the chunks before it.
func TestTrackManyEqualsTrack(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 9))
	w := &failingWAL{memWAL: memWAL{id: "many"}}
	many := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1, FlushRows: 3000, WAL: w})
	one := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1, FlushRows: 3000})
	rm, err := many.StartRun(ctx, RunSpec{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := one.StartRun(ctx, RunSpec{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	ep := int64(3)
	for round := 0; round < 12; round++ {
		n := []int{1, 7, walChunk, walChunk + 1, 9000}[rng.IntN(5)]
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = rng.NormFloat64()
			if rng.IntN(50) == 0 {
				vals[i] = math.NaN()
			}
		}
		var steps []int64
		if rng.IntN(2) == 0 {
			steps = make([]int64, n)
			for i := range steps {
				steps[i] = int64(rng.IntN(20000)) // repeats and disorder
			}
		}
		name := fmt.Sprint("m", rng.IntN(3))
		opts := TrackOptions{Context: map[string]any{"k": rng.IntN(2)}}
		if rng.IntN(2) == 0 {
			opts.Epoch = &ep
		}
		before := w.appends.Load()
		if got, err := rm.TrackMany(name, vals, steps, opts); err != nil || got != n {
			t.Fatalf("round %d: TrackMany %d of %d: %v", round, got, n, err)
		}
		// One record per chunk, and maybe a series record, a flush's
		// heartbeat and the run's claim record (logged again after each
		// flush rotates the log).
		if recs := w.appends.Load() - before; recs > int64((n+walChunk-1)/walChunk+3) {
			t.Errorf("round %d: %d points logged in %d records", round, n, recs)
		}
		for i, v := range vals {
			o := opts
			if steps != nil {
				s := steps[i]
				o.Step = &s
			}
			if err := ro.Track(v, name, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	compare := func(when string) {
		t.Helper()
		sa, err := many.AllSeries(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		sb, err := one.AllSeries(ctx, "r")
		if err != nil || len(sa) != len(sb) {
			t.Fatalf("%s: series %d and %d: %v", when, len(sa), len(sb), err)
		}
		for i := range sa {
			a, _ := many.ReadMany(ctx, []SeriesID{sa[i].ID}, ReadOptions{})
			b, _ := one.ReadMany(ctx, []SeriesID{sb[i].ID}, ReadOptions{})
			sameVals := len(a[0].Values) == len(b[0].Values)
			for k := 0; sameVals && k < len(a[0].Values); k++ {
				x, y := a[0].Values[k], b[0].Values[k]
				sameVals = x == y || math.IsNaN(x) && math.IsNaN(y)
			}
			if !slices.Equal(a[0].Steps, b[0].Steps) || !slices.Equal(a[0].Epochs, b[0].Epochs) || !sameVals {
				t.Fatalf("%s: %s differs: %d points against %d", when, sa[i].Name, a[0].Len(), b[0].Len())
			}
			xa, _ := many.SeriesStats(ctx, []SeriesID{sa[i].ID})
			xb, _ := one.SeriesStats(ctx, []SeriesID{sb[i].ID})
			p, q := xa[sa[i].ID], xb[sb[i].ID]
			if p.Count != q.Count || p.FirstStep != q.FirstStep || p.LastStep != q.LastStep || p.Min != q.Min || p.Max != q.Max || p.NonFinite != q.NonFinite {
				t.Fatalf("%s: %s stats %+v against %+v", when, sa[i].Name, p, q)
			}
		}
	}
	compare("buffered and flushed")

	// A log write that fails: the chunks before it are tracked, none after.
	fw := &failingWAL{memWAL: memWAL{id: "fail"}}
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1, WAL: fw})
	run, err := r.StartRun(ctx, RunSpec{ID: "f"})
	if err != nil {
		t.Fatal(err)
	}
	// From here: the series record, the first chunk, then the second fails.
	fw.failAt.Store(fw.appends.Load() + 3)
	got, err := run.TrackMany("loss", make([]float64, 5*walChunk), nil, TrackOptions{})
	if err == nil || got != walChunk {
		t.Fatalf("TrackMany with the third append failing: %d tracked, %v; want %d and the error", got, err, walChunk)
	}
	ss, _ := r.AllSeries(ctx, "f")
	md, err := r.ReadMany(ctx, []SeriesID{ss[0].ID}, ReadOptions{})
	if err != nil || md[0].Len() != walChunk || md[0].Steps[walChunk-1] != walChunk-1 {
		t.Fatalf("after the failure: %d points, %v", md[0].Len(), err)
	}
	if _, err := run.TrackMany("loss", []float64{1}, []int64{1, 2}, TrackOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("steps and values of different lengths: %v", err)
	}
}

// failingWAL counts its Appends and fails the failAt-th (from 1; 0:
// none).
type failingWAL struct {
	memWAL
	appends, failAt atomic.Int64
}

func (w *failingWAL) Append(rec []byte) error {
	if n := w.appends.Add(1); n == w.failAt.Load() {
		return errors.New("disk full")
	}
	return w.memWAL.Append(rec)
}
