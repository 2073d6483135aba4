package tracking

import (
	"context"
	"slices"
	"testing"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// TestSeriesIndex checks that Optimize builds the series_id index over
// every metrics fragment, rebuilds it after new points, and that reads of
// sorted fragments (range reads) and of unsorted ones agree.
func TestSeriesIndex(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushRows: 500})
	run, err := r.StartRun(ctx, RunSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"loss", "acc", "lr"}
	track := func(from, to int) {
		for i := from; i < to; i++ {
			for k, n := range names {
				if err := run.Track(float64(i*10+k), n); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(wantIndexed bool, n int) {
		t.Helper()
		d, err := lance.Open(ctx, st, "repo/"+MetricsTable, lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ix, err := d.Indices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var frags []uint64
		for _, in := range ix {
			if in.Name == SeriesIndex && slices.Equal(in.Columns, []string{"series_id"}) && in.Type == "BTreeIndexDetails" {
				frags = append(frags, in.Fragments...)
			}
		}
		slices.Sort(frags)
		if got := slices.Equal(frags, fragIDs(d)); got != wantIndexed {
			t.Fatalf("index covers %v, fragments %v, want covered=%v", frags, fragIDs(d), wantIndexed)
		}
		ss, err := r.AllSeries(ctx, run.ID())
		if err != nil || len(ss) != len(names) {
			t.Fatalf("series %v %v", ss, err)
		}
		for _, s := range ss {
			md, err := r.ReadMany(ctx, []SeriesID{s.ID}, ReadOptions{})
			if err != nil || md[0].Len() != n {
				t.Fatalf("%s: %d points (want %d) %v", s.Name, md[0].Len(), n, err)
			}
			k := slices.Index(names, s.Name)
			for i := range n {
				if md[0].Steps[i] != int64(i) || md[0].Values[i] != float64(i*10+k) {
					t.Fatalf("%s point %d: step %d value %v", s.Name, i, md[0].Steps[i], md[0].Values[i])
				}
			}
		}
	}
	track(0, 2000)
	check(false, 2000)
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check(true, 2000)
	track(2000, 2500)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check(false, 2500) // new fragments are not covered until the next Optimize
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check(true, 2500)
}
