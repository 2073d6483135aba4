package tracking

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// staticStore is a store that cannot list, as a static HTTP origin: the
// latest versions come from the hints and probes.
type staticStore struct{ store.Store }

func (staticStore) List(context.Context, store.ListOptions) ([]store.ObjectInfo, error) {
	return nil, store.ErrNotSupported
}

// TestSpeculativeReads checks reads of warm read-only handles made through
// lance.Speculate (as the wasm module makes them) against a fresh handle's,
// while a writer commits points and runs at random: each answer is the
// latest, on a store that lists and on one that cannot, with and without a
// VersionTTL whose grace a refuted speculation must not start.
func TestSpeculativeReads(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	w := openTest(t, mem, RepoOptions{FlushInterval: -1})
	rng := rand.New(rand.NewPCG(7, 11))
	runs := []*Run{}
	newRun := func() {
		r, err := w.StartRun(ctx, RunSpec{ID: fmt.Sprintf("r%d", len(runs))})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	newRun()
	step := int64(0)
	track := func() {
		for i := 0; i < 1+rng.IntN(20); i++ {
			s := step
			step++
			if err := runs[rng.IntN(len(runs))].Track(float64(s)/3, "loss", TrackOptions{Step: &s}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	track()
	handles := map[string]*Repo{
		"listing":           openTest(t, mem, RepoOptions{ReadOnly: true}),
		"static":            openTest(t, staticStore{mem}, RepoOptions{ReadOnly: true}),
		"static, TTL 1h":    openTest(t, staticStore{mem}, RepoOptions{ReadOnly: true, VersionTTL: time.Hour}),
		"listing, TTL 1h":   openTest(t, mem, RepoOptions{ReadOnly: true, VersionTTL: time.Hour}),
		"static, no commit": openTest(t, staticStore{mem}, RepoOptions{ReadOnly: true}),
	}
	// state is what a read of every series finds: each run's series and
	// their points.
	state := func(r *Repo, speculate bool) string {
		var out string
		read := func(ctx context.Context) error {
			infos, err := r.Runs(ctx, RunFilter{})
			if err != nil {
				return err
			}
			var ids []SeriesID
			for _, in := range infos {
				ss, err := r.AllSeries(ctx, in.ID)
				if err != nil {
					return err
				}
				for _, s := range ss {
					ids = append(ids, s.ID)
				}
			}
			slices.Sort(ids)
			data, err := r.ReadMany(ctx, ids, ReadOptions{})
			if err != nil {
				return err
			}
			out = fmt.Sprint(len(infos), ids)
			for _, m := range data {
				out += fmt.Sprint(m.Steps, m.Values)
			}
			return nil
		}
		var err error
		if speculate {
			err = lance.Speculate(ctx, read)
		} else {
			err = read(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for round := 0; round < 30; round++ {
		switch rng.IntN(3) {
		case 0:
			newRun()
			fallthrough
		default:
			track()
		}
		want := state(openTest(t, mem, RepoOptions{ReadOnly: true}), false)
		for name, h := range handles {
			if name == "static, no commit" {
				continue
			}
			if h.opts.VersionTTL > 0 {
				// The grace ends when the handle is told of a newer
				// version; the read after must be the latest.
				if _, err := h.LatestVersions(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := state(h, true); got != want {
				t.Fatalf("round %d, %s: a speculative read answered\n%.300s\nwant\n%.300s", round, name, got, want)
			}
		}
	}
	// On a warm handle with nothing committed, a speculative read makes
	// the requests a plain one does, and answers the same.
	h := handles["static, no commit"]
	want := state(h, false)
	before := mem.Counters()
	if got := state(h, false); got != want {
		t.Fatal("a second plain read differs")
	}
	plain := mem.Counters().Sub(before).Requests()
	before = mem.Counters()
	if got := state(h, true); got != want {
		t.Fatalf("speculative read on a warm handle:\n%.300s\nwant\n%.300s", got, want)
	}
	if n := mem.Counters().Sub(before).Requests(); n > plain {
		t.Errorf("a speculative warm read made %d requests, a plain one %d", n, plain)
	}
}
