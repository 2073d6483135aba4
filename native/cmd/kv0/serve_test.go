package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
)

// fixturesDir is the repository's Lance sample datasets
// (tests/testdata/lance-samples, written by lance itself; see its README).
func fixturesDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "..", "tests", "testdata", "lance-samples"))
	if err == nil {
		_, err = os.Stat(d)
	}
	if err != nil {
		t.Fatalf("the lance-samples fixtures are missing: %v", err)
	}
	return d
}

// v22Dir is the datasets lance 12 wrote in format 2.2 (and two in 2.1),
// core/lancefile/testdata/v22 (see its README).
const v22Dir = "../../../core/lancefile/testdata/v22"

// serveRoot is a folder holding a tracking repository (written by kv0
// demo and kv0 track) and datasets: the lance-samples fixtures under
// fixtures/, lance 12's tables under v22/, two written by kv0 with
// versions and tags (formats 2.2 and 2.1), the tables of a 2.1 demo
// repository under repo21/ and key-value databases of both formats under
// kvdb/.
type serveRoot struct {
	dir      string
	datasets []string            // paths under dir
	columns  map[string][]string // each dataset's top-level columns
	runs     []tracking.RunInfo
}

// newServeRoot writes a serve root into the test's temporary folder.
func newServeRoot(t *testing.T) *serveRoot {
	t.Helper()
	sr, err := buildServeRoot(t.TempDir(), fixturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return sr
}

func buildServeRoot(dir, fixtures string) (*serveRoot, error) {
	sr := &serveRoot{dir: dir}
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"demo", dir, "--runs", "1", "--steps", "1500"}, &out, &errOut); code != 0 {
		return nil, fmt.Errorf("demo: %s", errOut.String())
	}
	// An archived run with a name of its own, through the Go API.
	st, err := fsstore.Open(dir)
	if err != nil {
		return nil, err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{})
	if err != nil {
		return nil, err
	}
	rn, err := r.StartRun(ctx, tracking.RunSpec{Name: "archived <one>", Experiment: "bert-sst2", Tags: []string{"old"}})
	if err != nil {
		return nil, err
	}
	_ = rn.SetParams(map[string]any{"optimizer": map[string]any{"lr": 0.5}, "note": "a&b"})
	for s := 0; s < 50; s++ {
		if err := rn.Track(math.Pow(-1, float64(s))*float64(s), "loss"); err != nil {
			return nil, err
		}
	}
	a := true
	if err := rn.Update(tracking.RunPatch{Archived: &a}); err != nil {
		return nil, err
	}
	if err := rn.Finish(ctx, tracking.StatusAborted); err != nil {
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	// A dataset written by kv0: three versions, a tag, nulls.
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32}, {Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}, nil)
	mk := func(from, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if i%5 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("<%d> \"é\" \u2028", i))
			}
			b.Field(2).(*array.Float32Builder).Append(float32(i) / 3)
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + int64(i)*1234567))
		}
		return b.NewRecordBatch()
	}
	// The same in format 2.1 as kv0/t21.lance.
	for _, w := range []struct{ name, format string }{{"kv0/t.lance", ""}, {"kv0/t21.lance", lance.DataFormat21}} {
		d, err := lance.Create(ctx, st, w.name, schema, lance.Batches(mk(0, 500)), lance.WriteOptions{DataFormat: w.format})
		if err != nil {
			return nil, err
		}
		if d, err = d.Append(ctx, lance.Batches(mk(500, 700)), lance.WriteOptions{MaxRowsPerFile: 300}); err != nil {
			return nil, err
		}
		if err := d.CreateTag(ctx, "v-one", 1); err != nil {
			return nil, err
		}
		sr.datasets = append(sr.datasets, w.name)
	}
	// The repository at the root is in format 2.2 (kv0's default); the
	// tables of a demo repository in 2.1, and key-value databases in both
	// formats (their write-ahead logs beside the root), are datasets too.
	if code := run(ctx, []string{"demo", filepath.Join(dir, "repo21"), "--runs", "1", "--steps", "200", "--format", "2.1"}, &out, &errOut); code != 0 {
		return nil, fmt.Errorf("demo --format 2.1: %s", errOut.String())
	}
	sr.datasets = append(sr.datasets, "repo21/runs.lance", "repo21/metrics.lance")
	wal := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-wal")
	for _, db := range []struct{ name, format string }{{"kvdb/db.lance", "2.2"}, {"kvdb/db21.lance", "2.1"}} {
		loc := filepath.Join(dir, db.name)
		puts := [][]string{{"kv", "put", loc, "alpha", "one", "--format", db.format, "--wal-dir", wal}}
		for i := range 6 {
			puts = append(puts, []string{"kv", "put", loc, fmt.Sprintf("key/%d", i), fmt.Sprintf("value %d", i), "--wal-dir", wal})
		}
		puts = append(puts, []string{"kv", "delete", loc, "key/2", "--wal-dir", wal})
		for _, args := range puts {
			if code := run(ctx, args, &out, &errOut); code != 0 {
				return nil, fmt.Errorf("%v: %s", args, errOut.String())
			}
		}
		sr.datasets = append(sr.datasets, db.name)
	}
	for ds, want := range map[string]string{"runs.lance": "2.2", "metrics.lance": "2.2", "kv0/t.lance": "2.2", "kv0/t21.lance": "2.1",
		"repo21/runs.lance": "2.1", "repo21/metrics.lance": "2.1", "kvdb/db.lance": "2.2", "kvdb/db21.lance": "2.1"} {
		sub, err := fsstore.OpenExisting(filepath.Join(dir, ds))
		if err != nil {
			return nil, err
		}
		d, err := lance.Open(ctx, sub, "", lance.OpenOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ds, err)
		}
		if got := d.DataFormat(); got != want {
			return nil, fmt.Errorf("%s is in format %s, not %s", ds, got, want)
		}
	}
	if fixtures != "" {
		if err := os.CopyFS(filepath.Join(dir, "fixtures"), os.DirFS(fixtures)); err != nil {
			return nil, err
		}
		for _, v := range []string{"default", "v2_0", "v1paths", "v2_2"} {
			sr.datasets = append(sr.datasets, "fixtures/"+v+"/kv.lance")
		}
		sr.datasets = append(sr.datasets, "fixtures/bigdel/t.lance", "fixtures/bigdel/t2.lance")
		tables, err := filepath.Glob(filepath.Join(v22Dir, "*.lance"))
		if err != nil || len(tables) == 0 {
			return nil, fmt.Errorf("lance 12's tables in %s: %v", v22Dir, err)
		}
		for _, tb := range tables {
			name := "v22/" + filepath.Base(tb)
			if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(tb)); err != nil {
				return nil, err
			}
			sr.datasets = append(sr.datasets, name)
		}
	}
	sr.columns = map[string][]string{}
	for _, ds := range sr.datasets {
		sub, err := fsstore.OpenExisting(filepath.Join(dir, ds))
		if err != nil {
			return nil, err
		}
		d, err := lance.Open(ctx, sub, "", lance.OpenOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ds, err)
		}
		for _, f := range d.ArrowSchema().Fields() {
			sr.columns[ds] = append(sr.columns[ds], f.Name)
		}
	}
	rr, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	if sr.runs, err = rr.Runs(ctx, tracking.RunFilter{}); err != nil {
		return nil, err
	}
	return sr, nil
}

// cli runs a kv0 command in-process and returns its stdout.
func cli(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("kv0 %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.Bytes()
}

// fetch GETs a path of the server and returns the body, failing on any
// status but want.
func fetch(t *testing.T, base, path string, want int) []byte {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d: %s", path, resp.StatusCode, want, b)
	}
	return b
}

// TestServeMatchesCLI compares every route with what the CLI prints for
// the same repository and datasets.
func TestServeMatchesCLI(t *testing.T) {
	sr := newServeRoot(t)
	st, err := fsstore.Open(sr.dir)
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(st, "", api.Options{Files: true})
	defer h.Close()
	// kv0 serve's server, whose answers leave in one write.
	srv := httptest.NewUnstartedServer(h)
	srv.Config = newHTTPServer(h, log.New(io.Discard, "", 0))
	srv.Listener = holdListener{Listener: srv.Listener}
	srv.Start()
	defer srv.Close()
	if len(sr.datasets) < 2 {
		t.Log("lance-samples fixtures not found: comparing the kv0-written dataset only")
	}

	t.Run("rows", func(t *testing.T) {
		for _, ds := range sr.datasets {
			loc := filepath.Join(sr.dir, ds)
			// needs: the columns a case names, which the dataset must have.
			for _, o := range []struct{ flags, query, needs []string }{
				{nil, nil, nil},
				{[]string{"--version", "1"}, []string{"version=1"}, nil},
				{[]string{"--limit", "7", "--columns", "key,seq"}, []string{"limit=7", "columns=key,seq"}, []string{"key", "seq"}},
				{[]string{"--where", "seq >= 150 AND op = 1", "--limit", "20"}, []string{"where=seq >= 150 AND op = 1", "limit=20"}, []string{"seq", "op"}},
				{[]string{"--columns", "s,id", "--where", "id < 30 OR s IS NULL"}, []string{"columns=s,id", "where=id < 30 OR s IS NULL"}, []string{"s", "id"}},
				{[]string{"--tag", "v-one", "--limit", "3"}, []string{"tag=v-one", "limit=3"}, nil},
				{[]string{"--where", "id >= 1190 OR id < 3"}, []string{"where=id >= 1190 OR id < 3"}, []string{"id"}},
				{[]string{"--limit", "0"}, []string{"limit=0"}, nil},
				// lance 12's dictionaries, constants and nested columns, filtered.
				{[]string{"--columns", "sd,cat,i64d,ld", "--where", "cat = 'red' AND i64d > 0"}, []string{"columns=sd,cat,i64d,ld", "where=cat = 'red' AND i64d > 0"}, []string{"sd", "cat", "i64d", "ld"}},
				{[]string{"--columns", "ts_ns,f32,d32,id", "--where", "f32 < 0 OR ts_ns IS NULL", "--limit", "50"}, []string{"columns=ts_ns,f32,d32,id", "where=f32 < 0 OR ts_ns IS NULL", "limit=50"}, []string{"ts_ns", "f32", "d32", "id"}},
				{[]string{"--columns", "cstr,lsc,ci64,nstruct", "--where", "id > 600 AND id <= 650"}, []string{"columns=cstr,lsc,ci64,nstruct", "where=id > 600 AND id <= 650"}, []string{"cstr", "lsc", "ci64", "nstruct", "id"}},
			} {
				if !compatible(sr, ds, o.flags, o.needs) {
					continue
				}
				want := cli(t, append([]string{"lance", "cat", loc}, o.flags...)...)
				q := url.Values{}
				for _, kv := range o.query {
					k, v, _ := strings.Cut(kv, "=")
					q.Set(k, v)
				}
				got := fetch(t, srv.URL, "/api/v1/datasets/"+ds+"/rows?"+q.Encode(), 200)
				if !bytes.Equal(got, want) {
					t.Errorf("%s %v: API rows differ from kv0 lance cat (%d vs %d bytes)\n%.400s\nwant\n%.400s", ds, o.flags, len(got), len(want), got, want)
				}
			}
		}
	})

	t.Run("info and log", func(t *testing.T) {
		for _, ds := range sr.datasets {
			loc := filepath.Join(sr.dir, ds)
			for _, o := range []struct {
				flags []string
				query string
			}{{nil, ""}, {[]string{"--version", "1"}, "?version=1"}, {[]string{"--tag", "v-one"}, "?tag=v-one"}} {
				if !compatible(sr, ds, o.flags, nil) {
					continue
				}
				want := cli(t, append([]string{"lance", "info", "--json", loc}, o.flags...)...)
				want = bytes.Replace(want, []byte(`"path":`+strconv.Quote(loc)), []byte(`"path":`+strconv.Quote(ds)), 1)
				if got := fetch(t, srv.URL, "/api/v1/datasets/"+ds+"/info"+o.query, 200); !bytes.Equal(got, want) {
					t.Errorf("%s info %v:\n%s\nwant\n%s", ds, o.flags, got, want)
				}
			}
			want := cli(t, "lance", "log", "--json", loc)
			if got := fetch(t, srv.URL, "/api/v1/datasets/"+ds+"/log", 200); !bytes.Equal(got, want) {
				t.Errorf("%s log:\n%s\nwant\n%s", ds, got, want)
			}
		}
	})

	t.Run("runs", func(t *testing.T) {
		for _, o := range []struct{ flags, query []string }{
			{nil, nil},
			{[]string{"--experiment", "bert-sst2"}, []string{"experiment=bert-sst2"}},
			{[]string{"--status", "failed"}, []string{"status=failed"}},
			{[]string{"--tag", "baseline"}, []string{"tag=baseline"}},
			{[]string{"--tag", "baseline", "--tag", "resnet18"}, []string{"tag=baseline", "tag=resnet18"}},
			{[]string{"--archived", "true"}, []string{"archived=true"}},
			{[]string{"--archived", "false"}, []string{"archived=false"}},
			{[]string{"--param", "optimizer.lr<0.01"}, []string{"param=optimizer.lr<0.01"}},
			{[]string{"--param", "optimizer.lr>=0.0003", "--param", "model.name=vit-small"}, []string{"param=optimizer.lr>=0.0003", "param=model.name=vit-small"}},
			{[]string{"--param", "amp=true"}, []string{"param=amp=true"}},
			{[]string{"--param", `note="a&b"`}, []string{`param=note="a&b"`}},
			{[]string{"--experiment", "nope"}, []string{"experiment=nope"}},
		} {
			want := cli(t, append([]string{"runs", sr.dir, "--json"}, o.flags...)...)
			q := url.Values{}
			for _, kv := range o.query {
				k, v, _ := strings.Cut(kv, "=")
				q.Add(k, v)
			}
			if got := fetch(t, srv.URL, "/api/v1/runs?"+q.Encode(), 200); !bytes.Equal(got, want) {
				t.Errorf("runs %v:\n%s\nwant\n%s", o.flags, got, want)
			}
		}
	})

	t.Run("run, params, series, stats, points", func(t *testing.T) {
		for _, in := range sr.runs {
			for _, key := range []string{in.ID, in.Name} {
				for _, cmd := range []string{"run", "params"} {
					want := cli(t, cmd, sr.dir, key, "--json")
					path := "/api/v1/runs/" + url.PathEscape(key)
					if cmd != "run" {
						path += "/" + cmd
					}
					if got := fetch(t, srv.URL, path, 200); !bytes.Equal(got, want) {
						t.Errorf("%s %s:\n%s\nwant\n%s", cmd, key, got, want)
					}
				}
			}
			// series: the CLI's JSON with the series ids as strings.
			cliJSON := cli(t, "series", sr.dir, in.ID, "--json")
			var want, got []map[string]any
			decodeNumbers(t, cliJSON, &want)
			apiJSON := fetch(t, srv.URL, "/api/v1/runs/"+in.ID+"/series", 200)
			decodeNumbers(t, apiJSON, &got)
			for _, s := range want {
				s["series_id"] = s["series_id"].(json.Number).String()
				if st, ok := s["stats"].(map[string]any); ok {
					st["series_id"] = st["series_id"].(json.Number).String()
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("series %s:\n%s\nwant (ids as strings)\n%s", in.ID, apiJSON, cliJSON)
			}
			if len(want) == 0 {
				t.Fatalf("run %s has no series", in.ID)
			}
			// stats: one per id, as series --json prints them under stats.
			var ids []string
			for _, s := range want {
				ids = append(ids, s["series_id"].(string))
			}
			var stats []any
			decodeNumbers(t, fetch(t, srv.URL, "/api/v1/stats?ids="+strings.Join(ids, ","), 200), &stats)
			for i, s := range want {
				if !reflect.DeepEqual(stats[i], s["stats"]) {
					t.Errorf("stats of %s: %v, want %v", ids[i], stats[i], s["stats"])
				}
			}
			// points: kv0 metrics --csv for the same series and max points.
			for _, s := range want {
				for _, mp := range []int{0, 1000, 37} {
					ctxJSON := s["context"].(string)
					args := []string{"metrics", sr.dir, in.ID, s["name"].(string), "--csv", "--max-points", strconv.Itoa(mp)}
					if ctxJSON != "{}" {
						args = append(args, "--context", ctxJSON)
					}
					comparePoints(t, cli(t, args...), fetch(t, srv.URL, fmt.Sprintf("/api/v1/series/points?ids=%s&max_points=%d", s["series_id"], mp), 200))
				}
			}
		}
	})

	t.Run("versions", func(t *testing.T) {
		r, err := tracking.OpenRepo(context.Background(), st, "", tracking.RepoOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		v, err := r.LatestVersions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"runs":%d,"params":%d,"series":%d,"metrics":%d}`+"\n", v.Runs, v.Params, v.Series, v.Metrics)
		if got := fetch(t, srv.URL, "/api/v1/versions", 200); string(got) != want {
			t.Errorf("versions %s, want %s", got, want)
		}
	})

	t.Run("unsupported and bad datasets", func(t *testing.T) {
		if len(sr.datasets) < 2 {
			t.Skip("needs the lance-samples fixtures")
		}
		for _, ds := range []string{"fixtures/legacy/kv.lance"} {
			var e api.ErrorBody
			body := fetch(t, srv.URL, "/api/v1/datasets/"+ds+"/rows", http.StatusNotImplemented)
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != api.CodeUnsupported {
				t.Errorf("%s: %s", ds, body)
			}
		}
	})
}

// compatible reports whether the flags apply to the dataset: it has the
// columns needs names, and the tag when they name one.
func compatible(sr *serveRoot, ds string, flags, needs []string) bool {
	if slices.Contains(flags, "--tag") && !strings.HasPrefix(ds, "kv0/") {
		return false
	}
	for _, c := range needs {
		if !slices.Contains(sr.columns[ds], c) {
			return false
		}
	}
	return true
}

func decodeNumbers(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// comparePoints compares kv0 metrics --csv with one series of
// /series/points.
func comparePoints(t *testing.T, csvOut, apiOut []byte) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(csvOut)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("csv: %v %q", err, csvOut)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	var got []struct {
		Steps      []int64   `json:"steps"`
		Values     []any     `json:"values"`
		Timestamps []float64 `json:"timestamps"`
		Epochs     []*int64  `json:"epochs"`
	}
	if err := json.Unmarshal(apiOut, &got); err != nil || len(got) != 1 {
		t.Fatalf("points: %v %s", err, apiOut)
	}
	p := got[0]
	if len(p.Steps) != len(recs)-1 {
		t.Fatalf("points: %d, kv0 metrics printed %d", len(p.Steps), len(recs)-1)
	}
	for i, rec := range recs[1:] {
		step, _ := strconv.ParseInt(rec[col["step"]], 10, 64)
		ts, err := time.Parse(time.RFC3339Nano, rec[col["timestamp"]])
		if err != nil {
			t.Fatal(err)
		}
		val, _ := strconv.ParseFloat(rec[col["value"]], 64)
		var vs string
		switch x := p.Values[i].(type) {
		case float64:
			vs = strconv.FormatFloat(x, 'g', -1, 64)
		case string:
			vs = strconv.Quote(x)
		}
		wantV := string(jsonl.AppendFloat(nil, val, 64))
		if _, isNum := p.Values[i].(float64); isNum {
			wantV = strconv.FormatFloat(val, 'g', -1, 64)
		}
		epochOK := rec[col["epoch"]] == "" && p.Epochs[i] == nil || p.Epochs[i] != nil && rec[col["epoch"]] == strconv.FormatInt(*p.Epochs[i], 10)
		if p.Steps[i] != step || vs != wantV || p.Timestamps[i] != float64(ts.UnixMicro())/1000 || !epochOK {
			t.Fatalf("point %d: api step %d value %v ts %v epoch %v; kv0 metrics %v", i, p.Steps[i], p.Values[i], p.Timestamps[i], p.Epochs[i], rec)
		}
	}
}

const serveHelperEnv = "KV0_SERVE_HELPER"

// TestHelperServe is the child of TestServeProcess: kv0 with the
// arguments in KV0_SERVE_HELPER, as the real binary runs them.
func TestHelperServe(t *testing.T) {
	args := os.Getenv(serveHelperEnv)
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestServeProcess runs kv0 serve as a process: it prints its URL, serves
// a range read of /files/ as the wasm reader's static mode does (with the
// token), and stops on SIGTERM within a second, with a connection open.
func TestServeProcess(t *testing.T) {
	sr := newServeRoot(t)
	// A symbolic link inside ROOT to a file outside it is never served.
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("not for the web"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(sr.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", sr.dir, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--allow-origin", "https://dash.example"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+strings.Join(args, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 {
				urls <- strings.TrimSuffix(strings.Fields(sc.Text()[i:])[0], "/")
			}
		}
		close(urls)
		exited <- cmd.Wait()
	}()
	var base string
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("kv0 serve printed no URL: %s", stderr.String())
		}
		base = u
	case <-time.After(30 * time.Second):
		t.Fatalf("kv0 serve printed no URL in 30s: %s", stderr.String())
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("serve listens on %s, want loopback", base)
	}
	client := &http.Client{Transport: &http.Transport{}} // keeps its connection open
	do := func(path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	if resp, _ := do("/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	if resp, b := do("/files/escape", "Authorization", "Bearer tok-123"); resp.StatusCode != 404 || bytes.Contains(b, []byte("not for the web")) {
		t.Errorf("/files/escape (a link out of ROOT): %d %q", resp.StatusCode, b)
	}
	if resp, _ := do("/api/v1/runs"); resp.StatusCode != 401 {
		t.Errorf("/api/v1/runs without the token: %d", resp.StatusCode)
	}
	if resp, b := do("/api/v1/runs", "Authorization", "Bearer tok-123"); resp.StatusCode != 200 || !bytes.Equal(b, cli(t, "runs", sr.dir, "--json")) {
		t.Errorf("/api/v1/runs with the token: %d %.200s", resp.StatusCode, b)
	}
	// The range reads of the wasm reader: a manifest's tail.
	versions, err := os.ReadDir(filepath.Join(sr.dir, "runs.lance", "_versions"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest string
	for _, v := range versions {
		if strings.HasSuffix(v.Name(), ".manifest") {
			manifest = v.Name()
			break
		}
	}
	content, err := os.ReadFile(filepath.Join(sr.dir, "runs.lance", "_versions", manifest))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(content))
	resp, b := do("/files/runs.lance/_versions/"+manifest, "Authorization", "Bearer tok-123", "Range", fmt.Sprintf("bytes=%d-%d", n-20, n-1))
	if resp.StatusCode != 206 || !bytes.Equal(b, content[n-20:]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", n-20, n-1, n) ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://dash.example" || resp.Header.Get("ETag") == "" {
		t.Errorf("range read: %d %v %q", resp.StatusCode, resp.Header, b)
	}
	if resp, _ := do("/"); resp.StatusCode != 404 && resp.StatusCode != 401 {
		t.Errorf("dashboard: %d", resp.StatusCode)
	}
	// SIGTERM with the client's connection still open.
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("kv0 serve exited with %v: %s", err, stderr.String())
		}
		// It cuts the open connection after 0.5 s; the bound leaves a
		// loaded machine room and still tells a stop from a hang.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("kv0 serve took %v to stop after SIGTERM", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("kv0 serve still running 10s after SIGTERM: %s", stderr.String())
	}
}

func TestServeUsage(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve"},
		{"serve", dir, dir},
		{"serve", dir, "--token-file", empty},
		{"serve", dir, "--token-file", filepath.Join(dir, "missing")},
		{"serve", dir, "--web", filepath.Join(dir, "missing")},
		{"serve", dir, "--wasm", empty},
		{"serve", dir, "--allow-origin", ""},
		{"serve", dir, "--answer-cache", "-1"},
		{"serve", dir, "--answer-cache", "lots"},
		{"serve", dir, "--nope"},
		{"runs", dir, "--archived", "maybe"},
		{"runs", dir, "--param", "lr"},
		{"runs", dir, "--param", "lr<<1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", filepath.Join(dir, "missing")}, &out, &errOut); code != 1 {
		t.Errorf("missing root: exit %d", code)
	}
	if code := run(context.Background(), []string{"serve", dir, "--listen", "256.0.0.1:1"}, &out, &errOut); code != 1 {
		t.Errorf("bad listen address: exit %d", code)
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestServeAnswerInOneWrite checks that kv0 serve's server sends an
// answer the handler has whole (headers and a 3,000-point body) in one
// write to the connection, the same bytes as the handler writes, where
// net/http alone takes two (its 4 KiB buffer, then the rest).
func TestServeAnswerInOneWrite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := r.StartRun(ctx, tracking.RunSpec{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3000; s++ {
		if err := rn.Track(math.Sin(float64(s)), "loss"); err != nil {
			t.Fatal(err)
		}
	}
	id, _ := tracking.NewSeriesID(rn.ID(), "loss", nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	h := api.New(st, "", api.Options{AnswerCache: -1})
	defer h.Close()
	target := fmt.Sprintf("/api/v1/series/points?ids=%d&max_points=0", id)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != 200 || rec.Body.Len() < 16<<10 {
		t.Fatalf("the handler: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	for _, held := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var writes atomic.Int64
		var l net.Listener = countingListener{ln, &writes}
		if held {
			l = holdListener{Listener: l, writeTimeout: defaultWriteTimeout}
		}
		srv := newHTTPServer(h, log.New(io.Discard, "", 0))
		go srv.Serve(l)
		c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
		for i := 0; i < 3; i++ { // one connection, kept alive
			before := writes.Load()
			resp, err := c.Get("http://" + ln.Addr().String() + target)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, rec.Body.Bytes()) {
				t.Fatalf("held %v: %d (%v), %d bytes, want the handler's %d", held, resp.StatusCode, err, len(body), rec.Body.Len())
			}
			n := writes.Load() - before
			if held && n != 1 || !held && n < 2 {
				t.Errorf("held %v: the answer took %d writes", held, n)
			}
		}
		srv.Close()
	}
}

func TestServeGCPercent(t *testing.T) {
	env := map[string]string{}
	if n, ok := serveGCPercent(func(k string) string { return env[k] }); !ok || n != 300 {
		t.Errorf("no GOGC: %d %v, want 300", n, ok)
	}
	env["GOGC"] = "50"
	if _, ok := serveGCPercent(func(k string) string { return env[k] }); ok {
		t.Error("GOGC=50 was overridden")
	}
}
