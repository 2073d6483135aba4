package api

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

var rewriteSeeds = flag.Int("rewrite.seeds", 3, "random sequences TestCachesFollowRewrites runs")

// rewriteWorld is a root whose datasets and repository the test rewrites
// the ways a live server sees them rewritten: new versions, deletions,
// compactions and cleanups of old versions (what a purge does), tags that
// move, and datasets (the repository's tables among them) deleted and
// written again, often under the version numbers they had.
type rewriteWorld struct {
	t      *testing.T
	ctx    context.Context
	st     *store.Memory
	rng    *rand.Rand
	next   int // ids of the rows written next
	maxV   uint64
	runs   []string            // every run id ever written
	series []tracking.SeriesID // every series ever written
}

func (w *rewriteWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// dataset opens d.lance, or returns nil when it does not exist.
func (w *rewriteWorld) dataset() *lance.Dataset {
	d, err := lance.Open(w.ctx, w.st, "d.lance", lance.OpenOptions{})
	if err != nil {
		return nil
	}
	return d
}

func (w *rewriteWorld) rows(n int) lance.RecordReader {
	w.next += n
	return lance.Batches(batch(w.next-n, n))
}

// removeAll deletes every object under prefix (a dataset deleted as
// rm -r would).
func (w *rewriteWorld) removeAll(prefix string) {
	objs, err := w.st.List(w.ctx, store.ListOptions{Prefix: prefix})
	w.must(err)
	for _, o := range objs {
		w.must(w.st.Delete(w.ctx, o.Key))
	}
}

// recreate writes d.lance anew with 1 to 4 versions.
func (w *rewriteWorld) recreate() {
	w.removeAll("d.lance/")
	d, err := lance.Create(w.ctx, w.st, "d.lance", testSchema, w.rows(1+w.rng.IntN(20)), lance.WriteOptions{})
	w.must(err)
	for range w.rng.IntN(4) {
		d, err = d.Append(w.ctx, w.rows(1+w.rng.IntN(20)), lance.WriteOptions{})
		w.must(err)
	}
	w.maxV = max(w.maxV, d.Version())
}

// writeRuns writes n finished runs with a series each into the repository
// (created when missing).
func (w *rewriteWorld) writeRuns(n int) {
	r, err := tracking.OpenRepo(w.ctx, w.st, "", tracking.RepoOptions{FlushInterval: -1})
	w.must(err)
	for range n {
		run, err := r.StartRun(w.ctx, tracking.RunSpec{Name: fmt.Sprintf("r%d", len(w.runs)), Experiment: "e"})
		w.must(err)
		w.must(run.SetParams(map[string]any{"lr": w.rng.Float64()}))
		base := w.rng.Float64()
		for s := range 50 + w.rng.IntN(100) {
			step := int64(s)
			w.must(run.Track(base+float64(s), "loss", tracking.TrackOptions{Step: &step,
				Time: time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)}))
		}
		w.must(r.PutRecord("notes", run.ID(), "n", map[string]any{"v": w.rng.IntN(1000)}))
		w.must(run.Finish(w.ctx, tracking.StatusFinished))
		id, err := tracking.NewSeriesID(run.ID(), "loss", nil)
		w.must(err)
		w.runs = append(w.runs, run.ID())
		w.series = append(w.series, id)
	}
	w.must(r.Close())
}

// step applies one random rewrite and names it.
func (w *rewriteWorld) step() string {
	d := w.dataset()
	switch op := w.rng.IntN(10); {
	case d == nil || op == 0:
		w.recreate()
		return "write d.lance again"
	case op == 1:
		d, err := d.Append(w.ctx, w.rows(1+w.rng.IntN(10)), lance.WriteOptions{})
		w.must(err)
		w.maxV = max(w.maxV, d.Version())
		return "append"
	case op == 2:
		_, _, err := d.Delete(w.ctx, fmt.Sprintf("id < %d", w.rng.IntN(w.next)))
		w.must(err)
		return "delete rows"
	case op == 3:
		// What a purge does: rewrite without the deleted rows, then
		// remove every version but the latest and their files.
		d, _, err := d.Compact(w.ctx, lance.CompactOptions{})
		w.must(err)
		w.maxV = max(w.maxV, d.Version())
		_, err = lance.CleanupOldVersions(w.ctx, w.st, "d.lance", 0, lance.CleanupOptions{})
		w.must(err)
		return "compact and clean up"
	case op == 4:
		w.removeAll("d.lance/")
		return "delete d.lance"
	case op == 5:
		refs, err := lance.ListVersions(w.ctx, w.st, "d.lance")
		w.must(err)
		_ = d.DeleteTag(w.ctx, "keep")
		w.must(d.CreateTag(w.ctx, "keep", refs[w.rng.IntN(len(refs))].Version))
		return "move tag keep"
	case op == 6:
		w.writeRuns(1)
		return "a new run"
	case op == 7:
		r, err := tracking.OpenRepo(w.ctx, w.st, "", tracking.RepoOptions{FlushInterval: -1})
		w.must(err)
		live, err := r.Runs(w.ctx, tracking.RunFilter{})
		w.must(err)
		if len(live) > 1 {
			w.must(r.DeleteRuns(w.ctx, []string{live[w.rng.IntN(len(live))].ID}))
		}
		w.must(r.Purge(w.ctx, true))
		w.must(r.Close())
		return "delete a run and purge"
	case op == 8:
		for _, t := range []string{tracking.RunsTable, tracking.ParamsTable, tracking.SeriesTable, tracking.MetricsTable, tracking.RecordsDir} {
			w.removeAll(t + "/")
		}
		w.writeRuns(1 + w.rng.IntN(2))
		return "write the repository again"
	default:
		_, err := lance.CleanupOldVersions(w.ctx, w.st, tracking.MetricsTable, 0, lance.CleanupOptions{})
		w.must(err)
		return "clean up the metrics table"
	}
}

// targets are the routes read after each step: every route of datasets
// (with every version number ever written, and one past them) and of the
// repository (with every run and series ever written).
func (w *rewriteWorld) targets() []string {
	out := []string{"/api/v1/datasets/d.lance/rows", "/api/v1/datasets/d.lance/rows?format=arrow", "/api/v1/datasets/d.lance/info",
		"/api/v1/datasets/d.lance/log", "/api/v1/datasets/d.lance/rows?tag=keep", "/api/v1/datasets/d.lance/info?tag=keep",
		"/api/v1/runs", "/api/v1/versions", "/api/v1/series?newest=5", "/api/v1/series?runs=" + strings.Join(w.runs, ","),
		"/api/v1/records", "/api/v1/records/notes"}
	for v := uint64(1); v <= w.maxV+1; v++ {
		out = append(out, fmt.Sprintf("/api/v1/datasets/d.lance/rows?version=%d", v), fmt.Sprintf("/api/v1/datasets/d.lance/info?version=%d", v))
	}
	for _, id := range w.runs {
		out = append(out, "/api/v1/runs/"+id, "/api/v1/runs/"+id+"/params", "/api/v1/runs/"+id+"/series", "/api/v1/records/notes?run="+id)
	}
	var ids []string
	for _, s := range w.series {
		id := strconv.FormatUint(uint64(s), 10)
		ids = append(ids, id)
		out = append(out, "/api/v1/series/points?ids="+id+"&max_points=40", "/api/v1/series/points?ids="+id+"&format=f64")
	}
	return append(out, "/api/v1/stats?ids="+strings.Join(ids, ","))
}

// TestCachesFollowRewrites checks that a long-lived handler, whose caches
// (opened versions, followed latest versions, opened data files, the
// repository handle's derived views, kept answers) fill as it answers,
// answers after every rewrite exactly what a handler with empty caches
// answers over the same store: no removed, deleted or replaced data, no
// 304 for an ETag whose answer changed, and never an immutable answer.
func TestCachesFollowRewrites(t *testing.T) {
	for seed := range uint64(*rewriteSeeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := &rewriteWorld{t: t, ctx: context.Background(), st: store.NewMemory(), rng: rand.New(rand.NewPCG(seed, 7))}
			w.recreate()
			w.writeRuns(2)
			h := New(w.st, "", Options{})
			defer h.Close()
			type seen struct {
				etag string
				code int
				body string
			}
			last := map[string]seen{}
			for i := 0; i < 25; i++ {
				what := "start"
				if i > 0 {
					what = w.step()
				}
				ref := New(w.st, "", Options{})
				for _, target := range w.targets() {
					want := get(t, ref, target)
					if prev, ok := last[target]; ok && prev.etag != "" {
						// The client's copy is current only if the answer
						// is the same.
						if got := get(t, h, target, "If-None-Match", prev.etag); got.Code == http.StatusNotModified &&
							(want.Code != prev.code || want.Body.String() != prev.body) {
							t.Fatalf("step %d (%s): %s: 304 for the ETag of an answer that changed:\nwas %d %.300s\nnow %d %.300s",
								i, what, target, prev.code, prev.body, want.Code, want.Body.String())
						}
					}
					got := get(t, h, target)
					if got.Code != want.Code || got.Body.String() != want.Body.String() {
						t.Fatalf("step %d (%s): %s: the long-lived handler answers\n%d %.400s\nan empty one\n%d %.400s",
							i, what, target, got.Code, got.Body.String(), want.Code, want.Body.String())
					}
					if cc := got.Header().Get("Cache-Control"); strings.Contains(cc, "immutable") {
						t.Fatalf("step %d (%s): %s: Cache-Control %q: a cleanup, purge or new dataset may change it", i, what, target, cc)
					}
					last[target] = seen{etag: got.Header().Get("ETag"), code: got.Code, body: got.Body.String()}
				}
				ref.Close()
			}
		})
	}
}
