package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// recordJSON is an element of /api/v1/records/{table}, decoded.
type recordJSON struct {
	Table     string          `json:"table"`
	RunID     *string         `json:"run_id"`
	ItemID    string          `json:"item_id"`
	Data      json.RawMessage `json:"data"`
	Seq       string          `json:"seq"`
	CreatedAt time.Time       `json:"created_at"`
}

type recKey struct{ table, run, item string }

// recordsModel is what the repository's records should be: the newest
// write of each (table, run, item), nil once deleted.
type recordsModel map[recKey]*string

func (m recordsModel) want(table, run string, deleted map[string]bool) []recKey {
	var out []recKey
	for k, v := range m {
		if k.table == table && v != nil && (run == "" || k.run == run) && (k.run == "" || !deleted[k.run]) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b recKey) int {
		if c := strings.Compare(a.run, b.run); c != 0 {
			return c
		}
		return strings.Compare(a.item, b.item)
	})
	return out
}

func getRecordsJSON(t *testing.T, h http.Handler, target string) []recordJSON {
	t.Helper()
	w := get(t, h, target)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %s", target, w.Code, w.Body)
	}
	var out []recordJSON
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out == nil {
		t.Fatalf("%s: %v (want a JSON array): %s", target, err, w.Body)
	}
	return out
}

// checkRecords compares an answer with the model.
func checkRecords(t *testing.T, got []recordJSON, want []recKey, m recordsModel, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d: %+v", what, len(got), len(want), got)
	}
	seqRe := regexp.MustCompile(`^[1-9][0-9]*$`)
	for i, k := range want {
		g := got[i]
		run := ""
		if g.RunID != nil {
			run = *g.RunID
			if run == "" {
				t.Errorf("%s: run_id present but empty (want it left out for a record of no run)", what)
			}
		}
		if g.Table != k.table || run != k.run || g.ItemID != k.item {
			t.Errorf("%s [%d]: %s/%s/%s, want %s/%s/%s", what, i, g.Table, run, g.ItemID, k.table, k.run, k.item)
		}
		var a, b any
		if json.Unmarshal(g.Data, &a) != nil || json.Unmarshal([]byte(*m[k]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s [%d]: data %s, want %s", what, i, g.Data, *m[k])
		}
		if !seqRe.MatchString(g.Seq) {
			t.Errorf("%s [%d]: seq %q is not a decimal string", what, i, g.Seq)
		}
		if g.CreatedAt.IsZero() {
			t.Errorf("%s [%d]: no created_at", what, i)
		}
	}
}

func TestRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cs := &countingStore{Store: f.st}
	h := New(cs, "", Options{})
	defer h.Close()

	// Before any records table: an empty list, and 404 for a table.
	if w := get(t, h, "/api/v1/records"); w.Code != 200 || w.Body.String() != "[]\n" {
		t.Fatalf("no tables: %d %q", w.Code, w.Body)
	}
	if w := get(t, h, "/api/v1/records/evals"); w.Code != 404 || errorOf(t, w).Error.Code != CodeNotFound ||
		!strings.Contains(w.Body.String(), "evals") {
		t.Fatalf("unknown table: %d %s", w.Code, w.Body)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	m := recordsModel{}
	tables := []string{"evals", "samples-2", "Z_last"}
	runs := append([]string{""}, f.runIDs...)
	deleted := map[string]bool{}
	etags := map[string]string{}
	for round := 0; round < 4; round++ {
		r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		for op := 0; op < 40; op++ {
			k := recKey{tables[rng.IntN(len(tables))], runs[rng.IntN(len(runs))], fmt.Sprintf("item-%d", rng.IntN(6))}
			if rng.IntN(5) == 0 {
				if err := r.DeleteRecord(k.table, k.run, k.item); err != nil {
					t.Fatal(err)
				}
				m[k] = nil
				continue
			}
			data := map[string]any{"round": round, "op": op, "text": "a <b> & \"c\"", "nested": map[string]any{"x": []int{op, round}}}
			b, _ := json.Marshal(data)
			s := string(b)
			if err := r.PutRecord(k.table, k.run, k.item, data); err != nil {
				t.Fatal(err)
			}
			m[k] = &s
		}
		if round == 2 {
			// A deleted run's records disappear.
			if err := r.DeleteRuns(ctx, []string{f.runIDs[1]}); err != nil {
				t.Fatal(err)
			}
			deleted[f.runIDs[1]] = true
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}

		w := get(t, h, "/api/v1/records")
		var names []string
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &names) != nil {
			t.Fatalf("tables: %d %s", w.Code, w.Body)
		}
		var wantNames []string
		for _, tb := range tables {
			for k := range m {
				if k.table == tb {
					wantNames = append(wantNames, tb)
					break
				}
			}
		}
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Errorf("round %d: tables %q, want %q", round, names, wantNames)
		}
		for _, tb := range wantNames {
			for _, run := range runs {
				target := "/api/v1/records/" + tb
				if run != "" {
					target += "?run=" + run
				}
				checkRecords(t, getRecordsJSON(t, h, target), m.want(tb, run, deleted), m, fmt.Sprintf("round %d %s", round, target))
				// Every round changes every table (40 writes over 3
				// tables), so every answer gets a new ETag.
				w := get(t, h, target)
				e := w.Header().Get("ETag")
				if e == "" || !strings.HasPrefix(e, "W/") || w.Header().Get("Cache-Control") != "public, max-age=1" {
					t.Errorf("%s: ETag %q, Cache-Control %q", target, e, w.Header().Get("Cache-Control"))
				}
				if e == etags[target] {
					t.Errorf("round %d %s: the ETag did not change with the data", round, target)
				}
				etags[target] = e
				before := cs.reads.Load()
				if w := get(t, h, target, "If-None-Match", e); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
					t.Errorf("%s revalidated: %d %s", target, w.Code, w.Body)
				}
				if n := cs.reads.Load() - before; n != 0 {
					t.Errorf("%s: a 304 read %d objects (want version probes only)", target, n)
				}
			}
		}
	}
	// An unknown run has no records; the answer is still an array.
	if got := getRecordsJSON(t, h, "/api/v1/records/evals?run=nope"); len(got) != 0 {
		t.Errorf("unknown run: %+v", got)
	}
	// HEAD answers the headers alone.
	req := httptest.NewRequest(http.MethodHead, "/api/v1/records/evals", nil)
	hw := httptest.NewRecorder()
	h.ServeHTTP(hw, req)
	if hw.Code != 200 || hw.Body.Len() != 0 || hw.Header().Get("Content-Length") == "0" {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", hw.Code, hw.Body.Len(), hw.Header().Get("Content-Length"))
	}
}

func TestRecordsBadRequests(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PutRecord("evals", f.runIDs[0], "a", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: f.st}
	h := New(cs, "", Options{})
	defer h.Close()
	// Bad table names: 400 naming the argument, before any store call.
	for _, seg := range append([]string{"a.b", "a%20b", "%00", "a%2Fb", "%2e%2e", "..", "é", strings.Repeat("x", 201)}, traversals[:5]...) {
		target := "/api/v1/records/" + seg
		before := cs.calls.Load()
		w := get(t, h, target)
		if strings.Contains(seg, "/") {
			if w.Code != 404 {
				t.Errorf("%s: %d %s, want 404 (no such route)", target, w.Code, w.Body)
			}
			continue
		}
		if w.Code != 400 {
			t.Errorf("%s: %d %s, want 400", target, w.Code, w.Body)
			continue
		}
		if e := errorOf(t, w); e.Error.Code != CodeInvalid || !strings.HasPrefix(e.Error.Message, "table: ") {
			t.Errorf("%s: %+v", target, e)
		}
		if n := cs.calls.Load() - before; n != 0 {
			t.Errorf("%s: %d store calls before refusing", target, n)
		}
	}
	for _, target := range []string{"/api/v1/records/evals?run=", "/api/v1/records/evals?run=a&run=b", "/api/v1/records/evals?tag=x",
		"/api/v1/records?run=x"} {
		w := get(t, h, target)
		if w.Code != 400 || errorOf(t, w).Error.Code != CodeInvalid {
			t.Errorf("%s: %d %s, want 400", target, w.Code, w.Body)
		}
	}
	for _, target := range []string{"/api/v1/records/nope", "/api/v1/records/evals/x", "/api/v1/records/"} {
		w := get(t, h, target)
		if target == "/api/v1/records/" {
			// An empty table name is a bad name.
			if w.Code != 400 {
				t.Errorf("%s: %d %s, want 400", target, w.Code, w.Body)
			}
			continue
		}
		if w.Code != 404 || errorOf(t, w).Error.Code != CodeNotFound {
			t.Errorf("%s: %d %s, want 404", target, w.Code, w.Body)
		}
	}
	// A root without a repository.
	hn := New(f.st, "nested", Options{})
	defer hn.Close()
	for _, target := range []string{"/api/v1/records", "/api/v1/records/evals"} {
		if w := get(t, hn, target); w.Code != 404 || errorOf(t, w).Error.Code != CodeNotFound {
			t.Errorf("no repository, %s: %d %s", target, w.Code, w.Body)
		}
	}
	// A store that cannot list (an http(s) origin): the tables cannot be
	// found, which is said; a table named still reads.
	hl := New(noListStore{f.st}, "", Options{})
	defer hl.Close()
	w := get(t, hl, "/api/v1/records")
	if w.Code != http.StatusNotImplemented || errorOf(t, w).Error.Code != CodeUnsupported || !strings.Contains(w.Body.String(), "cannot list") {
		t.Errorf("no listing: %d %s", w.Code, w.Body)
	}
	// The token guards the records routes too.
	ht := New(f.st, "", Options{Token: "s3cret"})
	defer ht.Close()
	if w := get(t, ht, "/api/v1/records/evals"); w.Code != 401 {
		t.Errorf("no token: %d", w.Code)
	}
	if w := get(t, ht, "/api/v1/records/evals", "Authorization", "Bearer s3cret"); w.Code != 200 || w.Header().Get("Cache-Control") != "private, max-age=1" {
		t.Errorf("token: %d %v", w.Code, w.Header())
	}
}

// noListStore is a store that cannot list, as an http(s) origin.
type noListStore struct{ store.Store }

func (noListStore) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	return nil, fmt.Errorf("listing %q: %w", opts.Prefix, store.ErrNotSupported)
}

// TestRecordsCorruptData: a record whose data is not JSON (written by
// another tool into the table) is a 422 naming the table and the item,
// never a body that is not JSON.
func TestRecordsCorruptData(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PutRecord("evals", f.runIDs[0], "good", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	h := New(f.st, "", Options{})
	defer h.Close()
	if w := get(t, h, "/api/v1/records/evals"); w.Code != 200 {
		t.Fatalf("before: %d %s", w.Code, w.Body)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, tracking.RecordsSchema)
	defer b.Release()
	b.Field(0).(*array.Uint64Builder).Append(uint64(time.Now().UnixNano()))
	b.Field(1).(*array.StringBuilder).Append("evals")
	b.Field(2).(*array.StringBuilder).Append(f.runIDs[0])
	b.Field(3).(*array.StringBuilder).Append("bad-item")
	b.Field(4).(*array.StringBuilder).Append("{not json")
	b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Now().UnixMicro()))
	rec := b.NewRecordBatch()
	defer rec.Release()
	d, err := lance.Open(ctx, f.st, tracking.RecordsDir+"/evals.lance", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append(ctx, lance.Batches(rec), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	w := get(t, h, "/api/v1/records/evals")
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("corrupt data: %d %s", w.Code, w.Body)
	}
	if e := errorOf(t, w); e.Error.Code != CodeCorrupt || !strings.Contains(e.Error.Message, `"evals"`) || !strings.Contains(e.Error.Message, `"bad-item"`) {
		t.Errorf("corrupt data: %+v", e)
	}
}

// FuzzRecordsRoute: any table segment and query is answered with JSON
// (an array, or an error body with a 4xx status), never a panic or a 5xx.
func FuzzRecordsRoute(f *testing.F) {
	fx := newFixture(f)
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, fx.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	if err := r.PutRecord("evals", fx.runIDs[0], "a", map[string]any{"x": 1}); err != nil {
		f.Fatal(err)
	}
	if err := r.Close(); err != nil {
		f.Fatal(err)
	}
	h := New(fx.st, "", Options{})
	for _, s := range []string{"evals", "evals?run=" + fx.runIDs[0], "..", "%2e%2e", "a%2Fb", "evals?run=", "evals/x", "", "%00", "é", "evals?run=a&run=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tail string) {
		target := "/api/v1/records/" + tail
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil || req.URL.Path == "" {
			return // not a request a client can send
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", target, w.Code, w.Body)
		}
		var v any
		if json.Unmarshal(w.Body.Bytes(), &v) != nil {
			t.Fatalf("%q: %d, not JSON: %q", target, w.Code, w.Body)
		}
		if w.Code == 200 {
			if _, ok := v.([]any); !ok {
				t.Fatalf("%q: 200 with %s", target, w.Body)
			}
		}
	})
}
