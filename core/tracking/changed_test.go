package tracking

import (
	"context"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// TestChanged: a poll of an unchanged repository is three Stats and no
// listing; each kind of commit (points, a new run) makes it report a change.
func TestChanged(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w, err := OpenRepo(ctx, st, "repo", RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run, err := w.StartRun(ctx, RunSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Track(1, "loss", TrackOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check := func(want bool) Versions {
		t.Helper()
		v, err := r.LatestVersions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.ResetCounters()
		got, err := r.Changed(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if c := st.Counters(); got || c.Stats != 3 || c.Requests() != 3 {
			t.Fatalf("unchanged: Changed = %v with %+v, want false with 3 Stats", got, c)
		}
		return v
	}
	v := check(false)
	for i, commit := range []func() error{
		func() error { return run.Track(2, "loss", TrackOptions{}) },
		func() error { _, err := w.StartRun(ctx, RunSpec{Name: "b"}); return err },
		func() error { return run.Track(3, "acc", TrackOptions{}) },
	} {
		if err := commit(); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Changed(ctx, v); err != nil || !got {
			t.Fatalf("commit %d: Changed = %v, %v; want true", i, got, err)
		}
		v = check(false)
	}
}
