package tracking

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomized tests (0: random)")

func testSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -seed %d)", s, s)
	return s
}

// modelRun is the expected merged state of a run.
type modelRun struct {
	info    RunInfo
	deleted bool
}

type modelPoint struct {
	step int64
	v    float64
}

// TestModel runs random operations through several handles opened one
// after another on one repository (with random flushes, optimizes and
// reopens) and compares every read with a model: runs merged per field
// (newest change of each field wins), params newest-wins, records
// newest-wins, and statistics equal to statistics recomputed from the
// points as reads see them (the last write of a step wins).
func TestModel(t *testing.T) {
	for i := 0; i < 4; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) { runModel(t, testSeed(t)) })
	}
}

func runModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 1))
	st := store.NewMemory()
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex // background flushes read the clock too
	now := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	open := func() *Repo {
		r, err := OpenRepo(ctx, st, "m", RepoOptions{FlushRows: 1 + rng.IntN(200), FlushInterval: -1, MaxFragments: 1 + rng.IntN(6), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := open()
	defer func() { r.Close() }()
	runs := map[string]*modelRun{}
	handles := map[string]*Run{}
	params := map[string]map[string]any{}
	points := map[SeriesID][]modelPoint{}
	records := map[[2]string]string{}
	var ids []string
	liveIDs := func() []string {
		var out []string
		for _, id := range ids {
			if !runs[id].deleted {
				out = append(out, id)
			}
		}
		return out
	}
	names := []string{"loss", "acc", "lr"}
	for op := 0; op < 400; op++ {
		live := liveIDs()
		switch k := rng.IntN(100); {
		case k < 8 || len(live) == 0:
			id := fmt.Sprintf("run%02d", len(ids))
			run, err := r.StartRun(ctx, RunSpec{ID: id, Name: "n" + id, Experiment: fmt.Sprint("e", rng.IntN(2)), Tags: []string{"t"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			handles[id] = run
			runs[id] = &modelRun{info: RunInfo{ID: id, Name: "n" + id, Experiment: run.repo.mustRun(t, id).Experiment, Tags: []string{"t"}, Status: StatusRunning}}
		case k < 60:
			id := live[rng.IntN(len(live))]
			run := handles[id]
			if run == nil {
				var err error
				if run, err = r.ResumeRun(ctx, id); err != nil {
					t.Fatal(err)
				}
				handles[id] = run
			}
			name := names[rng.IntN(len(names))]
			var c map[string]any
			if rng.IntN(3) == 0 {
				c = map[string]any{"subset": "val"}
			}
			sid, _ := NewSeriesID(id, name, c)
			v := rng.NormFloat64()
			if rng.IntN(30) == 0 {
				v = math.Inf(1)
			}
			var opts TrackOptions
			opts.Context = c
			ps := points[sid]
			switch rng.IntN(4) {
			case 0: // a step written again, or out of order
				s := int64(rng.IntN(20))
				opts.Step = &s
			default: // the default step: one past the last in this handle
			}
			if err := run.Track(v, name, opts); err != nil {
				t.Fatal(err)
			}
			_ = ps
			// The default step is one past the handle's last; recover it
			// from the handle.
			st := run.lookupForTest(name, c)
			points[sid] = append(points[sid], modelPoint{st.last, v})
		case k < 70:
			id := live[rng.IntN(len(live))]
			run := handles[id]
			if run == nil {
				continue
			}
			key := []string{"lr", "opt.name", "opt.beta", "bs"}[rng.IntN(4)]
			var v any = rng.IntN(5)
			if rng.IntN(2) == 0 {
				v = fmt.Sprint("s", rng.IntN(3))
			}
			m := map[string]any{}
			flatten("", nest(key, v), m)
			if err := run.SetParams(nest(key, v)); err != nil {
				t.Fatal(err)
			}
			if params[id] == nil {
				params[id] = map[string]any{}
			}
			for k, v := range m {
				b, _ := json.Marshal(v)
				var x any
				_ = json.Unmarshal(b, &x)
				params[id][k] = x
			}
		case k < 80:
			id := live[rng.IntN(len(live))]
			var p RunPatch
			mr := runs[id]
			switch rng.IntN(4) {
			case 0:
				s := []string{StatusFinished, StatusFailed, StatusRunning}[rng.IntN(3)]
				p.Status = &s
				mr.info.Status = s
			case 1:
				d := fmt.Sprint("d", rng.IntN(9))
				p.Description = &d
				mr.info.Description = d
			case 2:
				a := rng.IntN(2) == 0
				p.Archived = &a
				mr.info.Archived = a
			case 3:
				tags := []string{fmt.Sprint("t", rng.IntN(3))}
				p.Tags = &tags
				mr.info.Tags = tags
			}
			var err error
			if run := handles[id]; run != nil && rng.IntN(2) == 0 {
				err = run.Update(p)
			} else {
				err = r.UpdateRun(ctx, id, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		case k < 86:
			table := []string{"evals", "samples"}[rng.IntN(2)]
			id := live[rng.IntN(len(live))]
			item := fmt.Sprint("i", rng.IntN(4))
			if rng.IntN(4) == 0 {
				if err := r.DeleteRecord(table, id, item); err != nil {
					t.Fatal(err)
				}
				delete(records, [2]string{table, id + "/" + item})
			} else {
				v := rng.IntN(100)
				if err := r.PutRecord(table, id, item, v); err != nil {
					t.Fatal(err)
				}
				records[[2]string{table, id + "/" + item}] = fmt.Sprint(v)
			}
		case k < 88:
			id := live[rng.IntN(len(live))]
			if err := r.DeleteRuns(ctx, []string{id}); err != nil {
				t.Fatal(err)
			}
			runs[id].deleted = true
			delete(params, id)
			for key := range records {
				if len(key[1]) > len(id) && key[1][:len(id)+1] == id+"/" {
					delete(records, key)
				}
			}
		case k < 92:
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		case k < 95:
			if _, err := r.Optimize(ctx); err != nil {
				t.Fatal(err)
			}
		default: // a new handle: steps continue from storage via ResumeRun
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			r = open()
			handles = map[string]*Run{}
		}
		if op%50 == 49 || op == 399 {
			checkModel(t, r, runs, params, points, records)
		}
	}
}

func nest(key string, v any) map[string]any {
	if i := slices.Index([]byte(key), '.'); i >= 0 {
		return map[string]any{key[:i]: nest(key[i+1:], v)}
	}
	return map[string]any{key: v}
}

func (r *Repo) mustRun(t *testing.T, id string) RunInfo {
	in, err := r.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (run *Run) lookupForTest(name string, c map[string]any) *seriesState {
	run.repo.mu.Lock()
	defer run.repo.mu.Unlock()
	if len(c) == 0 {
		return run.plain[name]
	}
	cj, _ := CanonicalContext(c)
	return run.series[name+"\x00"+cj]
}

func checkModel(t *testing.T, r *Repo, runs map[string]*modelRun, params map[string]map[string]any, points map[SeriesID][]modelPoint, records map[[2]string]string) {
	t.Helper()
	ctx := context.Background()
	got, err := r.Runs(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for id, m := range runs {
		if !m.deleted {
			want = append(want, id)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Runs: %d runs, want %d", len(got), len(want))
	}
	for _, in := range got {
		m := runs[in.ID].info
		if in.Name != m.Name || in.Experiment != m.Experiment || in.Description != m.Description || in.Status != m.Status ||
			in.Archived != m.Archived || !slices.Equal(in.Tags, m.Tags) {
			t.Fatalf("run %s: got %+v, want %+v", in.ID, in, m)
		}
		ps, err := r.AllParams(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != len(params[in.ID]) {
			t.Fatalf("run %s params: got %d keys, want %d", in.ID, len(ps), len(params[in.ID]))
		}
		for k, v := range params[in.ID] {
			if fmt.Sprint(ps[k].Any()) != fmt.Sprint(v) {
				t.Fatalf("run %s param %s: got %v, want %v", in.ID, k, ps[k].Any(), v)
			}
		}
		series, err := r.AllSeries(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]SeriesID, len(series))
		for i, s := range series {
			ids[i] = s.ID
		}
		stats, err := r.SeriesStats(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		data, err := r.ReadMany(ctx, ids, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			// Expected: the last write of each step, ordered by step.
			last := map[int64]float64{}
			for _, p := range points[id] {
				last[p.step] = p.v
			}
			steps := make([]int64, 0, len(last))
			for s := range last {
				steps = append(steps, s)
			}
			slices.Sort(steps)
			d := data[i]
			if !slices.Equal(d.Steps, steps) {
				t.Fatalf("series %x of %s: steps %v, want %v", id, in.ID, d.Steps, steps)
			}
			exp := newDelta()
			for j, s := range steps {
				if d.Values[j] != last[s] {
					t.Fatalf("series %x step %d: value %v, want %v", id, s, d.Values[j], last[s])
				}
				exp.add(s, last[s], 0, uint64(j))
			}
			gs := stats[id]
			es := exp.stats(id)
			if gs.Count != es.Count || gs.FirstStep != es.FirstStep || gs.LastStep != es.LastStep || gs.LastValue != es.LastValue ||
				gs.Min != es.Min || gs.MinStep != es.MinStep || gs.Max != es.Max || gs.MaxStep != es.MaxStep || gs.NonFinite != es.NonFinite {
				t.Fatalf("series %x of %s stats:\n got %+v\nwant %+v", id, in.ID, gs, es)
			}
		}
	}
	for _, table := range []string{"evals", "samples"} {
		recs, err := r.ListRecords(ctx, table, RecordQuery{})
		if err != nil {
			continue // not created yet
		}
		n := 0
		for key, v := range records {
			if key[0] == table {
				n++
				_ = v
			}
		}
		if len(recs) != n {
			t.Fatalf("records %s: %d, want %d", table, len(recs), n)
		}
		for _, x := range recs {
			if records[[2]string{table, x.RunID + "/" + x.ItemID}] != string(x.Data) {
				t.Fatalf("record %s %s/%s = %s, want %s", table, x.RunID, x.ItemID, x.Data, records[[2]string{table, x.RunID + "/" + x.ItemID}])
			}
		}
	}
}
