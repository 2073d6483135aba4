package tracking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

// tableFormats returns the format of each table of the repository at root
// of st and of each of its data files, as "format" or "format:files".
func tableFormats(t *testing.T, st store.Store, root string, tables ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range tables {
		d, err := lance.Open(context.Background(), st, store.Join(root, name), lance.OpenOptions{})
		if err != nil {
			t.Fatalf("table %s: %v", name, err)
		}
		f := d.DataFormat()
		for _, fr := range d.Fragments() {
			for _, df := range fr.Files {
				if df.Version != f {
					f += ":" + df.Version
				}
			}
		}
		out[name] = f
	}
	return out
}

// TestDataFormatOfRepositories: a repository's tables are created in the
// format asked for (default 2.2) and keep it, records tables created later
// included; asking an existing repository for the other format fails with
// lance.ErrDataFormat; a format kv0 does not write is refused.
func TestDataFormatOfRepositories(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ create, want, other string }{
		{"", lance.DataFormat22, lance.DataFormat21},
		{lance.DataFormat21, lance.DataFormat21, lance.DataFormat22},
		{lance.DataFormat22, lance.DataFormat22, lance.DataFormat21},
	} {
		st := store.NewMemory()
		r, err := OpenRepo(ctx, st, "repo", RepoOptions{DataFormat: tc.create, FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		run, err := r.StartRun(ctx, RunSpec{Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			if err := run.Track(float64(i), "loss"); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		// Reopened without a format (or with its own), it keeps it, also
		// for a table it creates now.
		for _, reopen := range []string{"", tc.want} {
			r, err := OpenRepo(ctx, st, "repo", RepoOptions{DataFormat: reopen, FlushInterval: -1})
			if err != nil {
				t.Fatalf("create %q, reopen %q: %v", tc.create, reopen, err)
			}
			if err := r.PutRecord("notes"+strings.ReplaceAll(reopen, ".", "_"), "", "x", map[string]any{"a": 1}); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		tables := []string{RunsTable, ParamsTable, SeriesTable, MetricsTable, recordsKey("notes"), recordsKey("notes" + strings.ReplaceAll(tc.want, ".", "_"))}
		for name, f := range tableFormats(t, st, "repo", tables...) {
			if f != tc.want {
				t.Fatalf("create %q: table %s is %s, want %s", tc.create, name, f, tc.want)
			}
		}
		_, err = OpenRepo(ctx, st, "repo", RepoOptions{DataFormat: tc.other})
		if !errors.Is(err, lance.ErrDataFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("create %q, reopen as %s: %v", tc.create, tc.other, err)
		}
		ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true, DataFormat: tc.other})
		if err != nil {
			t.Fatalf("read-only open with format %s: %v", tc.other, err)
		}
		ro.Close()
	}
	st := store.NewMemory()
	if _, err := OpenRepo(ctx, st, "bad", RepoOptions{DataFormat: "2.0"}); !errors.Is(err, lance.ErrDataFormat) {
		t.Fatalf("format 2.0: %v", err)
	}
	if objs, _ := st.List(ctx, store.ListOptions{Prefix: "bad/"}); len(objs) != 0 {
		t.Fatalf("a refused format wrote %v", objs)
	}
}

// TestLance12Repo: kv0 writes a repository (format 2.2); lance 12 reads
// its tables, appends points to a series and compacts every table; kv0
// reads the series with lance 12's points, the runs and the parameters.
func TestLance12Repo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the lance 12 interop test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	l12 := os.Getenv("KV0_LANCEDB12")
	if l12 == "" {
		l12, _ = filepath.Abs(filepath.Join("..", "..", "tests", "interop", "lance12"))
	}
	if _, err := os.Stat(filepath.Join(l12, "node_modules", "@lancedb", "lancedb")); err != nil {
		if _, perr := os.Stat(filepath.Join(l12, "package.json")); perr == nil && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but lancedb 0.39 is not installed in %s (run npm ci there)", l12)
		}
		t.Skipf("no lancedb 0.39 in %s (set KV0_LANCEDB12 to a folder where npm i -E @lancedb/lancedb@0.39.0 apache-arrow@18.1.0 ran)", l12)
	}
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenRepo(ctx, st, "", RepoOptions{FlushRows: 700, FlushInterval: -1, MaxFragments: -1})
	if err != nil {
		t.Fatal(err)
	}
	var runs []*Run
	for i := range 3 {
		run, err := r.StartRun(ctx, RunSpec{Name: fmt.Sprintf("run-%d", i), Experiment: "e", Tags: []string{"t"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.SetParams(map[string]any{"lr": 0.1 * float64(i+1), "bs": 32}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	for s := range 2000 {
		for i, run := range runs {
			if err := run.Track(float64(s*(i+1)), "loss"); err != nil {
				t.Fatal(err)
			}
			if s%10 == 0 {
				if err := run.Track(float64(i), "acc", TrackOptions{Context: map[string]any{"subset": "val"}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := runs[2].Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for name, f := range tableFormats(t, st, "", RunsTable, ParamsTable, SeriesTable, MetricsTable) {
		if f != lance.DataFormat22 {
			t.Fatalf("table %s of a new repository: %s", name, f)
		}
	}
	r, err = OpenRepo(ctx, st, "", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	series, err := r.AllSeries(ctx, runs[1].ID())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var loss SeriesID
	for _, s := range series {
		if s.Name == "loss" {
			loss = s.ID
		}
	}
	if loss == 0 {
		t.Fatalf("no loss series in %+v", series)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "lance12_repo.mjs"))
	const from, added = 5000, 300
	cmd := exec.Command(node, script, l12, dir, fmt.Sprint(uint64(loss)), fmt.Sprint(from), fmt.Sprint(added))
	cmd.Env = append(os.Environ(), "RUST_LOG=error")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node lance12_repo.mjs: %v\n%s", err, stderr.String())
	}
	t.Logf("lance 12 read %s", strings.TrimSpace(string(out)))
	for name, f := range tableFormats(t, st, "", RunsTable, ParamsTable, SeriesTable, MetricsTable) {
		if f != lance.DataFormat22 {
			t.Fatalf("table %s after lance 12: %s", name, f)
		}
	}
	r, err = OpenRepo(ctx, st, "", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md, err := r.ReadMany(ctx, []SeriesID{loss}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := md[0]
	if m.Len() != 2000+added {
		t.Fatalf("loss of run 1: %d points, want %d", m.Len(), 2000+added)
	}
	for k := range m.Len() {
		step, want := int64(k), float64(2*k)
		if k >= 2000 {
			step = int64(from + k - 2000)
			want = float64(step) / 2
		}
		if m.Steps[k] != step || m.Values[k] != want {
			t.Fatalf("point %d: step %d value %v, want step %d value %v", k, m.Steps[k], m.Values[k], step, want)
		}
	}
	if want := time.UnixMilli(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + from); !m.Timestamps[2000].Equal(want) {
		t.Fatalf("timestamp of lance 12's first point %v, want %v", m.Timestamps[2000], want)
	}
	infos, err := r.Runs(ctx, RunFilter{})
	if err != nil || len(infos) != 3 {
		t.Fatalf("runs %+v (%v)", infos, err)
	}
	names := []string{}
	for _, in := range infos {
		names = append(names, in.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"run-0", "run-1", "run-2"}) {
		t.Fatalf("runs %v", names)
	}
	ps, err := r.AllParams(ctx, runs[2].ID())
	three := 3.0
	if err != nil || ps["lr"].Num == nil || *ps["lr"].Num != 0.1*three {
		t.Fatalf("params %+v (%v)", ps, err)
	}
}
