package s3

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/wal"
)

// trackModel is what a test wrote: the points of each series by step.
type trackModel map[tracking.SeriesID]map[int64]float64

func (m trackModel) clone() trackModel {
	c := trackModel{}
	for id, pts := range m {
		c[id] = map[int64]float64{}
		for s, v := range pts {
			c[id][s] = v
		}
	}
	return c
}

func (m trackModel) check(t *testing.T, r *tracking.Repo, ids []tracking.SeriesID) {
	t.Helper()
	ctx := context.Background()
	data, err := r.ReadMany(ctx, ids, tracking.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want := m[id]
		steps := make([]int64, 0, len(want))
		for s := range want {
			steps = append(steps, s)
		}
		slices.Sort(steps)
		got := data[i]
		if !slices.Equal(got.Steps, steps) {
			t.Fatalf("series %x: %d steps, want %d", uint64(id), len(got.Steps), len(steps))
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for k, s := range steps {
			if got.Values[k] != want[s] {
				t.Fatalf("series %x step %d: %v, want %v", uint64(id), s, got.Values[k], want[s])
			}
			lo, hi = min(lo, want[s]), max(hi, want[s])
		}
		st, ok := stats[id]
		if len(steps) == 0 {
			if ok {
				t.Fatalf("series %x: stats for a series without points", uint64(id))
			}
			continue
		}
		if !ok || st.Count != uint64(len(steps)) || st.FirstStep != steps[0] || st.LastStep != steps[len(steps)-1] ||
			st.Min != lo || st.Max != hi || st.LastValue != want[steps[len(steps)-1]] {
			t.Fatalf("series %x: stats %+v (present %v), want count %d steps %d..%d min %v max %v", uint64(id), st, ok,
				len(steps), steps[0], steps[len(steps)-1], lo, hi)
		}
	}
}

// TestTrackingOnS3 (and OnGCS, OnAzure) runs a tracking repository on S3 with its WAL on local
// disk: runs with params and points (some overwriting earlier steps),
// flushes, reopen, a writer that dies without flushing (its WAL replays),
// Optimize, and DeleteRuns, checking runs, params, series, points and
// statistics through fresh handles and a read-only one.
func TestTrackingOnS3(t *testing.T)    { trackingSuite(t, s3Backend()) }
func TestTrackingOnGCS(t *testing.T)   { trackingSuite(t, gcsBackend()) }
func TestTrackingOnAzure(t *testing.T) { trackingSuite(t, azureBackend()) }

func trackingSuite(t *testing.T, b backend) {
	b.need(t)
	ctx := context.Background()
	uri := b.newURI(t.Name())
	st := b.open(t, uri)
	walDir := t.TempDir()
	var lastWAL *wal.Log
	flushRows := 1000
	open := func(readOnly bool) *tracking.Repo {
		t.Helper()
		// No heartbeats: the "crashed" handle below stays alive in this
		// process, and its background tick flushes for a heartbeat when one
		// is due (a resumed run's is due at once), which would store what
		// the crash must not (a pause after its writes made this fail on
		// every store).
		o := tracking.RepoOptions{ReadOnly: readOnly, FlushInterval: -1, FlushRows: flushRows, HeartbeatInterval: -1}
		if !readOnly {
			w, err := wal.Open(uri, wal.Options{Dir: walDir})
			if err != nil {
				t.Fatal(err)
			}
			o.WAL, lastWAL = w, w
		}
		r, err := tracking.OpenRepo(ctx, st, "repo", o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{ReadOnly: true}); !errors.Is(err, tracking.ErrNotFound) {
		t.Fatalf("read-only open of a missing repository: %v", err)
	}
	r := open(false)
	m := trackModel{}
	var runIDs []string
	var sids []tracking.SeriesID
	runOf := map[tracking.SeriesID]string{}
	track := func(run *tracking.Run, name string, step int64, v float64) {
		t.Helper()
		if err := run.Track(v, name, tracking.TrackOptions{Step: &step}); err != nil {
			t.Fatal(err)
		}
		id, _ := tracking.NewSeriesID(run.ID(), name, nil)
		if m[id] == nil {
			m[id] = map[int64]float64{}
			sids = append(sids, id)
			runOf[id] = run.ID()
		}
		m[id][step] = v
	}
	for i := range 3 {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: "run" + itoa(int64(i)), Experiment: "s3", Tags: []string{"t"}})
		if err != nil {
			t.Fatal(err)
		}
		runIDs = append(runIDs, run.ID())
		if err := run.SetParams(map[string]any{"lr": 0.1 * float64(i+1), "model": map[string]any{"layers": i + 2}}); err != nil {
			t.Fatal(err)
		}
		for s := range int64(2500) { // crosses FlushRows: automatic flushes
			track(run, "loss", s, float64(i)+1/float64(s+1))
			if s%10 == 0 {
				track(run, "acc", s/10, float64(s)/2500)
			}
		}
		if i == 1 {
			if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m.check(t, r, sids)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen; a second writer session overwrites some steps and appends
	// more, then "dies": SyncWAL makes its writes durable locally, and the
	// handle is abandoned without flushing or closing.
	flushRows = 1 << 20 // no flush may start before the "crash"
	r = open(false)
	flushRows = 1000
	run, err := r.ResumeRun(ctx, runIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	for s := int64(2000); s < 3000; s++ {
		track(run, "loss", s, -float64(s))
	}
	if err := r.SyncWAL(); err != nil {
		t.Fatal(err)
	}
	// The crash: the WAL file is closed as the process's death would
	// close it (its lock is released, its records kept); the handle is
	// dropped without Flush or Close.
	if err := lastWAL.Close(false); err != nil {
		t.Fatal(err)
	}
	old := m.clone()
	for s := int64(2000); s < 3000; s++ {
		delete(old[sids[0]], s)
	}
	for s := int64(2000); s < 2500; s++ {
		old[sids[0]][s] = 1 / float64(s+1)
	}
	old.check(t, open(true), sids) // nothing of it reached S3
	r = open(false)
	defer func() { r.Close() }()
	m.check(t, r, sids)

	runs, err := r.Runs(ctx, tracking.RunFilter{Experiment: "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[1].Status != tracking.StatusFinished || runs[0].Status != tracking.StatusRunning {
		t.Fatalf("runs %+v", runs)
	}
	params, err := r.AllParams(ctx, runIDs[2])
	if err != nil {
		t.Fatal(err)
	}
	if lr, layers := params["lr"].Any(), params["model.layers"].Any(); lr != 0.30000000000000004 && lr != 0.3 || layers != 4.0 {
		t.Fatalf("params %v %v", lr, layers)
	}
	filtered, err := r.Runs(ctx, tracking.RunFilter{Params: []tracking.ParamFilter{{Key: "model.layers", Op: ">=", Value: 3}}})
	if err != nil || len(filtered) != 2 {
		t.Fatalf("param filter: %d runs, %v", len(filtered), err)
	}

	for id, run := range runOf {
		series, err := r.AllSeries(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(series, func(in tracking.SeriesInfo) bool { return in.ID == id }) {
			t.Fatalf("series %x missing from AllSeries(%s)", uint64(id), run)
		}
	}

	// Optimize sorts the metrics by series; reads and stats stay equal.
	os, err := r.Optimize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if os.MetricsRewritten == 0 {
		t.Fatalf("Optimize rewrote no metrics: %+v", os)
	}
	m.check(t, r, sids)
	m.check(t, open(true), sids)

	// Delete a run: its series read empty, the others are untouched.
	if err := r.DeleteRuns(ctx, []string{runIDs[1]}); err != nil {
		t.Fatal(err)
	}
	for id := range m {
		if runOf[id] == runIDs[1] {
			m[id] = map[int64]float64{}
		}
	}
	ro := open(true)
	runs, err = ro.Runs(ctx, tracking.RunFilter{})
	if err != nil || len(runs) != 2 || slices.ContainsFunc(runs, func(in tracking.RunInfo) bool { return in.ID == runIDs[1] }) {
		t.Fatalf("runs after delete: %+v, %v", runs, err)
	}
	for _, id := range sids {
		if len(m[id]) == 0 {
			d, err := ro.ReadMany(ctx, []tracking.SeriesID{id}, tracking.ReadOptions{})
			if err != nil || d[0].Len() != 0 {
				t.Fatalf("deleted series reads %d points, %v", d[0].Len(), err)
			}
		}
	}
	var live []tracking.SeriesID
	for _, id := range sids {
		if len(m[id]) > 0 {
			live = append(live, id)
		}
	}
	m.check(t, ro, live)
	if _, err := ro.StartRun(ctx, tracking.RunSpec{}); !errors.Is(err, tracking.ErrReadOnly) {
		t.Fatalf("StartRun on a read-only handle: %v", err)
	}
}
