package tracking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// slowStore delays (or fails) reads of metrics data files: the reads of a
// metrics compaction (flushes only write them).
type slowStore struct {
	store.Store
	delay time.Duration
	fail  atomic.Bool
	reads atomic.Int64
}

var errInjected = errors.New("injected read failure")

func (s *slowStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if strings.Contains(key, MetricsTable+"/data/") {
		s.reads.Add(1)
		if s.fail.Load() {
			return errInjected
		}
		time.Sleep(s.delay)
	}
	return s.Store.ReadAt(ctx, key, p, off)
}

// TestBackgroundCompaction keeps tracking while slow metrics compactions
// run in the background, closes the handle while one may still run, and
// checks that a reopened handle reads every point exactly, in order.
func TestBackgroundCompaction(t *testing.T) {
	ctx := context.Background()
	st := &slowStore{Store: store.NewMemory(), delay: 2 * time.Millisecond}
	open := func() *Repo {
		r, err := OpenRepo(ctx, st, "", RepoOptions{FlushRows: 100, FlushInterval: -1, MaxFragments: 3})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open()
	run, err := r.StartRun(ctx, RunSpec{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.SetParams(map[string]any{"lr": 0.1}); err != nil {
		t.Fatal(err)
	}
	const steps = 5000
	for s := 0; s < steps; s++ {
		for _, name := range []string{"loss", "acc"} {
			if err := run.Track(float64(s), name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st.reads.Load() == 0 {
		t.Fatal("no compaction read metrics data")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = open()
	defer r.Close()
	series, err := r.AllSeries(ctx, "a")
	if err != nil || len(series) != 2 {
		t.Fatalf("%d series, %v", len(series), err)
	}
	ids := []SeriesID{series[0].ID, series[1].ID}
	data, err := r.ReadMany(ctx, ids, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		if d.Len() != steps {
			t.Fatalf("%d points, want %d", d.Len(), steps)
		}
		for i := range d.Steps {
			if d.Steps[i] != int64(i) || d.Values[i] != float64(i) {
				t.Fatalf("point %d: step %d value %v", i, d.Steps[i], d.Values[i])
			}
		}
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if s := stats[id]; s.Count != steps || s.LastStep != steps-1 || s.Max != steps-1 {
			t.Fatalf("statistics %+v", s)
		}
	}
	if p, err := r.AllParams(ctx, "a"); err != nil || len(p) != 1 {
		t.Fatalf("params %v, %v", p, err)
	}
}

// TestBackgroundCompactionError makes a background compaction fail: the
// next Flush returns its error, nothing is lost, and a later compaction
// succeeds.
func TestBackgroundCompactionError(t *testing.T) {
	ctx := context.Background()
	st := &slowStore{Store: store.NewMemory()}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushRows: 1 << 20, FlushInterval: -1, MaxFragments: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	run, _ := r.StartRun(ctx, RunSpec{ID: "a"})
	st.fail.Store(true)
	n := 0
	track := func(k int) {
		for i := 0; i < k; i++ {
			if err := run.Track(float64(n), "loss"); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	var failed error
	for i := 0; i < 4 && failed == nil; i++ {
		track(10)
		failed = r.Flush(ctx)
	}
	if !errors.Is(failed, errInjected) || !strings.Contains(failed.Error(), "compact metrics") {
		t.Fatalf("Flush returned %v, want the compaction's error", failed)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("the error was returned twice: %v", err)
	}
	st.fail.Store(false)
	for i := 0; i < 3; i++ {
		track(10)
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d, err := r.latest(ctx, MetricsTable)
	if err != nil {
		t.Fatal(err)
	}
	if k := len(d.Fragments()); k > 3 {
		t.Fatalf("%d metrics fragments: no compaction succeeded", k)
	}
	sid, _ := NewSeriesID("a", "loss", nil)
	data, err := r.ReadMany(ctx, []SeriesID{sid}, ReadOptions{})
	if err != nil || data[0].Len() != n {
		t.Fatalf("%d points, want %d (%v)", data[0].Len(), n, err)
	}
	for i, v := range data[0].Values {
		if v != float64(i) {
			t.Fatal(fmt.Sprint("point ", i, " = ", v))
		}
	}
}

// TestCompactable: full-size fragments never trigger a compaction, small
// ones and ones with deletions do.
func TestCompactable(t *testing.T) {
	var p metricsPlan
	for i := 0; i < 40; i++ {
		p.scanned = append(p.scanned, lance.Fragment{ID: uint64(i), PhysicalRows: lance.DefaultMaxRowsPerFile})
	}
	if n := compactable(p); n != 0 {
		t.Fatalf("%d compactable full-size fragments", n)
	}
	p.scanned = append(p.scanned, lance.Fragment{ID: 50, PhysicalRows: 10},
		lance.Fragment{ID: 51, PhysicalRows: lance.DefaultMaxRowsPerFile, DeletedRows: 1})
	if n := compactable(p); n != 2 {
		t.Fatalf("%d compactable fragments, want 2", n)
	}
}
