package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
)

// TestTrackingRepo writes a tracking repository with the Go API (runs with
// per-field updates and a deletion, nested parameters, series with
// contexts, non-finite values, statistics deltas, records tables, Optimize
// with its series_id index, then writes after it), and checks that lancedb
// reads every table with the rows kv0's reader sees, that the repository
// computed from lancedb's rows with the tracking merge rules equals what
// the Go API returns, and that lancedb lists and uses the BTree index.
// Then lancedb compacts every table (its BTree index remapped, kv0's file
// buffers gone): the Go API, reopened, returns the same, and lancedb
// agrees; kv0 optimizes again, and lancedb agrees.
func TestTrackingRepo(t *testing.T) {
	forEachInstall(t, func(t *testing.T, in *lanceInstall) {
		forEachFormat(t, in, func(t *testing.T, format string) { testTrackingRepo(t, in, format) })
	})
}

func testTrackingRepo(t *testing.T, in *lanceInstall, format string) {
	ctx := context.Background()
	root := t.TempDir()
	st := mustStore(t, root)
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := base
	now := func() time.Time { clock = clock.Add(1500 * time.Microsecond); return clock }
	opts := tracking.RepoOptions{FlushRows: 3000, FlushInterval: -1, Now: now, DataFormat: format}
	r, err := tracking.OpenRepo(ctx, st, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // the repository open at the end

	var runs []*tracking.Run
	for i := range 5 {
		run, err := r.StartRun(ctx, tracking.RunSpec{Name: fmt.Sprintf("run-%d", i), Experiment: []string{"mnist", "cifar"}[i%2],
			Description: "interop ✓", Tags: []string{"a", fmt.Sprint("t", i)}, Kind: "training", Target: `{"model":"resnet"}`})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
		if err := run.SetParams(map[string]any{"optimizer": map[string]any{"lr": 0.001 * float64(i+1), "name": "adam"},
			"bs": 32 << i, "aug": i%2 == 0, "layers": []int{64, 32}, "note": nil}); err != nil {
			t.Fatal(err)
		}
	}
	epoch := func(e int64) *int64 { return &e }
	track := func(run *tracking.Run, from, to int) {
		for s := from; s < to; s++ {
			v := math.Sin(float64(s) / 100)
			switch s {
			case 77:
				v = math.NaN()
			case 78:
				v = math.Inf(1)
			}
			must(t, run.Track(v, "loss"))
			must(t, run.Track(float64(s)/float64(to), "acc", tracking.TrackOptions{Epoch: epoch(int64(s / 100)), Context: map[string]any{"subset": "val"}}))
			if s%10 == 0 {
				must(t, run.Track(0.1/float64(1+s), "lr"))
			}
		}
	}
	for i, run := range runs {
		track(run, 0, 2000+500*i)
	}
	// A series long enough that Optimize gives it pages of its own (page
	// breaks around it in every column of the sorted file).
	for s := range 40_000 {
		must(t, runs[0].Track(float64(s%977)/3, "grad_norm"))
	}
	must(t, r.UpdateRun(ctx, runs[1].ID(), tracking.RunPatch{Name: ptr("renamed"), Tags: &[]string{"x"}}))
	must(t, runs[2].Finish(ctx, tracking.StatusFailed))
	must(t, runs[0].Finish(ctx, ""))
	for i := range 30 {
		must(t, r.PutRecord("evals", runs[i%3].ID(), fmt.Sprint("item-", i%12), map[string]any{"score": i, "ok": i%2 == 0}))
	}
	must(t, r.PutRecord("samples", "", "global", map[string]any{"text": "héllo \"q\""}))
	must(t, r.DeleteRecord("evals", runs[0].ID(), "item-0"))
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	// grad_norm is long enough for a downsampled level: its data file
	// carries kv0's level buffers (after the pages, and in the metadata),
	// which lancedb must read past below.
	if !hasLevels(t, filepath.Join(root, "metrics.lance")) {
		t.Fatal("no sorted metrics file carries a downsampled level")
	}
	// After Optimize: a deletion, new points (unsorted fragments, not
	// covered by the index), a parameter overwrite, a record.
	must(t, r.DeleteRuns(ctx, []string{runs[4].ID()}))
	track(runs[3], 3500, 4200)
	must(t, runs[3].SetParams(map[string]any{"optimizer": map[string]any{"lr": 0.5}}))
	must(t, r.PutRecord("evals", runs[3].ID(), "late", map[string]any{"score": -1}))
	must(t, r.Flush(ctx))

	check := func(stage string, wantUnindexed bool) {
		out := filepath.Join(t.TempDir(), "dump")
		runTracking(t, in, "dump", root, out)
		// Every table, row for row.
		tables := []string{"runs", "params", "series", "metrics", "records/evals", "records/samples"}
		for _, tb := range tables {
			got, err := os.ReadFile(filepath.Join(out, tb+".jsonl"))
			if err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			want := goRows(t, root, tb+".lance")
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %s: lancedb and kv0 read different rows\nlancedb: %s\nkv0:     %s", stage, tb, diffAt(got, want), diffAt(want, got))
			}
		}
		// The API's view.
		var js map[string]any
		readJSON(t, filepath.Join(out, "view.json"), &js)
		goView := apiView(t, r, root)
		for _, k := range []string{"runs", "params", "series", "points", "records", "stats_rows"} {
			if !reflect.DeepEqual(js[k], goView[k]) {
				a, _ := json.Marshal(js[k])
				b, _ := json.Marshal(goView[k])
				t.Fatalf("%s: %s differ\nlancedb: %s\nGo API:  %s", stage, k, diffAt(a, b), diffAt(b, a))
			}
		}
		if n := len(js["points"].(map[string]any)); n != 4*3+1 { // 4 live runs × 3, and grad_norm
			t.Fatalf("%s: %d live series", stage, n)
		}
		// The index.
		var ix struct {
			Indices []struct {
				Name, IndexType string
				Columns         []string
			}
			Stats struct{ NumIndexedRows, NumUnindexedRows int64 }
			Plan  string
		}
		readJSON(t, filepath.Join(out, "index.json"), &ix)
		if len(ix.Indices) != 1 || ix.Indices[0].Name != tracking.SeriesIndex || ix.Indices[0].IndexType != "BTree" ||
			!reflect.DeepEqual(ix.Indices[0].Columns, []string{"series_id"}) {
			t.Fatalf("%s: lancedb lists indices %+v", stage, ix.Indices)
		}
		if !strings.Contains(ix.Plan, "ScalarIndexQuery") {
			t.Fatalf("%s: lancedb does not use the index:\n%s", stage, ix.Plan)
		}
		if (ix.Stats.NumUnindexedRows > 0) != wantUnindexed || ix.Stats.NumIndexedRows == 0 {
			t.Fatalf("%s: index stats %+v", stage, ix.Stats)
		}
		t.Logf("%s: lancedb %s agrees on every table; index %+v", stage, in.lancedb, ix.Stats)
	}
	for _, tb := range []string{"runs", "params", "series", "metrics", "records/evals", "records/samples"} {
		requireFormat(t, filepath.Join(root, tb+".lance"), format)
	}
	check("after writes past Optimize", true)
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a second Optimize", false)

	// lancedb compacts every table; kv0 reads the same repository.
	before := apiView(t, r, root)
	must(t, r.Close())
	runTracking(t, in, "compact", root)
	if r, err = tracking.OpenRepo(ctx, st, "", opts); err != nil {
		t.Fatal(err)
	}
	if after := apiView(t, r, root); !reflect.DeepEqual(after, before) {
		a, _ := json.Marshal(after)
		b, _ := json.Marshal(before)
		t.Fatalf("after lancedb's compaction the Go API returns\n%s\nbefore it\n%s", diffAt(a, b), diffAt(b, a))
	}
	check("after lancedb compacted every table", false)
	run3, err := r.ResumeRun(ctx, runs[3].ID())
	if err != nil {
		t.Fatal(err)
	}
	track(run3, 4200, 4300)
	must(t, r.Flush(ctx))
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check("after kv0 wrote and optimized again", false)
}

// runTracking runs tracking.mjs with args against the install's lancedb.
func runTracking(t *testing.T, in *lanceInstall, args ...string) {
	t.Helper()
	cmd := in.command("tracking.mjs", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node tracking.mjs %v (lancedb %s): %v\n%s", args, in.lancedb, err, tail(stderr.String(), 4000))
	}
}

// hasLevels reports whether some data file of the dataset at dir holds a
// level index (global buffer 3, "kv0lvix1").
func hasLevels(t *testing.T, dir string) bool {
	t.Helper()
	ctx := context.Background()
	d, err := lance.Open(ctx, mustStore(t, dir), "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Fragments() {
		b, err := d.DataFileBuffer(ctx, f.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(b, []byte("kv0lvix1")) {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// goRows is kv0's reader's view of a table in canonical JSON Lines.
func goRows(t *testing.T, root, table string) []byte {
	t.Helper()
	d, err := lance.Open(context.Background(), mustStore(t, filepath.Join(root, table)), "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	s, err := d.Scan(context.Background(), lance.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for s.Next() {
		if err := w.Write(s.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func diffAt(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("@%d …%s…", i, a[lo:min(len(a), i+200)])
}

func usText(tm time.Time) string {
	if tm.IsZero() {
		return ""
	}
	return tm.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func floatText(v float64) string { return string(jsonl.AppendFloat(nil, v, 64)) }

// apiView is the repository as the Go API returns it, in the shape
// tracking.mjs computes from lancedb's rows, passed through JSON so both
// sides compare as the same Go values.
func apiView(t *testing.T, r *tracking.Repo, root string) map[string]any {
	t.Helper()
	ctx := context.Background()
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{}
	rv, pv, sv, ptv := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	for _, in := range runs {
		rv[in.ID] = map[string]any{"run_id": in.ID, "name": in.Name, "experiment": in.Experiment, "description": in.Description,
			"tags": in.Tags, "status": in.Status, "archived": in.Archived, "created_at": usText(in.CreatedAt),
			"updated_at": usText(in.UpdatedAt), "ended_at": usText(in.EndedAt), "kind": in.Kind, "target": in.Target,
			"heartbeat_at": usText(in.HeartbeatAt)}
		ps, err := r.AllParams(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for k, p := range ps {
			var num any
			if p.Num != nil {
				num = floatText(*p.Num)
			}
			m[k] = map[string]any{"value": string(p.Value), "num": num, "text": p.Text, "flag": p.Flag}
		}
		if len(m) > 0 {
			pv[in.ID] = m
		}
		ss, err := r.AllSeries(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]tracking.SeriesID, len(ss))
		for i, s := range ss {
			sv[fmt.Sprint(uint64(s.ID))] = map[string]any{"run_id": s.RunID, "name": s.Name, "context": s.Context}
			ids[i] = s.ID
		}
		md, err := r.ReadMany(ctx, ids, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range md {
			p := map[string]any{}
			var steps, epochs, ts, vals []any
			for i := range m.Len() {
				steps = append(steps, m.Steps[i])
				if m.Epochs[i] == tracking.NoEpoch {
					epochs = append(epochs, nil)
				} else {
					epochs = append(epochs, m.Epochs[i])
				}
				ts = append(ts, usText(m.Timestamps[i]))
				vals = append(vals, floatText(m.Values[i]))
			}
			p["steps"], p["epochs"], p["timestamps"], p["values"] = steps, epochs, ts, vals
			ptv[fmt.Sprint(uint64(m.SeriesID))] = p
		}
	}
	v["runs"], v["params"], v["series"], v["points"] = rv, pv, sv, ptv
	tables, err := r.RecordTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]any{}
	for _, tb := range tables {
		list, err := r.ListRecords(ctx, tb, tracking.RecordQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var l []any
		for _, x := range list {
			l = append(l, map[string]any{"run_id": x.RunID, "item_id": x.ItemID, "data": string(x.Data)})
		}
		recs[tb] = l
	}
	v["records"] = recs
	// Reserved rows (statistics deltas and WAL marks) of metrics.
	n := 0
	d, err := lance.Open(ctx, mustStore(t, filepath.Join(root, tracking.MetricsTable)), "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(ctx, lance.ScanOptions{Columns: []string{"series_id"}})
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
		for _, id := range s.Record().Column(0).(*array.Uint64).Uint64Values() {
			if id == 0 {
				n++
			}
		}
	}
	s.Close()
	if n == 0 {
		t.Fatal("no statistics rows")
	}
	v["stats_rows"] = n
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
