package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// traversals are spellings of a way out of the root, each to be refused
// with 400 before the store is touched.
var traversals = []string{
	"..", "../etc", "a/../../etc", "%2e%2e", "%2E%2E/etc", ".%2e/x", "%2e./x", "a/%2e%2e/%2e%2e/x",
	"a%2f..%2f..%2fx", "a%2Fb", "..%2fx", "%5c..%5cx", "a%5cb", `a\b`, `..\x`, "a%00b", "%00", "a//b", "/etc/passwd",
	"%2fetc%2fpasswd", "//etc", ".", "a/./b", "%2e", "C:", "c:%5cwindows", "a%0ab", "a%09b",
}

func TestPathTraversalRefusedBeforeTheStore(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	h := New(cs, "", Options{Files: true, Web: fstest.MapFS{"index.html": {Data: []byte("hi")}}, Wasm: fstest.MapFS{}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, p := range traversals {
		for _, target := range []string{"/api/v1/datasets/" + p + "/info", "/api/v1/datasets/" + p + "/rows?limit=1",
			"/api/v1/datasets/" + p + "/log", "/files/" + p, "/wasm/" + p, "/" + p} {
			// Through a real server, on a raw connection, so nothing on the
			// client side cleans the path.
			status, body := rawGet(t, srv.Listener.Addr().String(), target)
			if status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400 (%s)", target, status, body)
				continue
			}
			var e ErrorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != CodeInvalid {
				t.Errorf("%s: body %q is not an Invalid error", target, body)
			}
		}
	}
	if n := cs.calls.Load(); n != 0 {
		t.Errorf("refused paths made %d store calls", n)
	}
	// A clean nested path works.
	if w := get(t, h, "/api/v1/datasets/nested/a/z.lance/info"); w.Code != 200 {
		t.Errorf("nested path: %d %s", w.Code, w.Body)
	}
}

// rawGet sends a request line as given and returns the status and body.
func rawGet(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// routes lists one valid request of every route.
func routes(f *fixture) []string {
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	return []string{
		"/api/v1/datasets/t.lance/rows", "/api/v1/datasets/t.lance/rows?format=arrow", "/api/v1/datasets/t.lance/info",
		"/api/v1/datasets/t.lance/log", "/api/v1/runs", "/api/v1/runs/" + f.runIDs[0], "/api/v1/runs/" + f.runIDs[0] + "/params",
		"/api/v1/runs/" + f.runIDs[0] + "/series", "/api/v1/series?runs=" + f.runIDs[0], "/api/v1/series/points?ids=" + id,
		"/api/v1/stats?ids=" + id, "/api/v1/versions", "/files/t.lance/_versions/18446744073709551614.manifest", "/", "/wasm/kv0.mjs",
	}
}

func TestToken(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	web := fstest.MapFS{"index.html": {Data: []byte("<p>dash</p>")}}
	wasm := fstest.MapFS{"kv0.mjs": {Data: []byte("export {}")}}
	h := New(cs, "", Options{Token: "s3cret", Files: true, Web: web, Wasm: wasm})
	for _, target := range routes(f) {
		for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret2", "s3cret", "Basic s3cret", "Bearer "} {
			w := get(t, h, target, "Authorization", auth)
			if w.Code != http.StatusUnauthorized || errorOf(t, w).Error.Code != CodeUnauthorized {
				t.Errorf("%s with %q: %d %s, want 401", target, auth, w.Code, w.Body)
			}
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", target)
			}
		}
	}
	if n := cs.calls.Load(); n != 0 {
		t.Errorf("unauthorized requests made %d store calls", n)
	}
	for i, target := range routes(f) {
		// The scheme's name is case-insensitive (RFC 9110, 11.1).
		auth := []string{"Bearer s3cret", "bearer s3cret", "BEARER  s3cret"}[i%3]
		w := get(t, h, target, "Authorization", auth)
		if w.Code != http.StatusOK {
			t.Errorf("%s with %q: %d %s", target, auth, w.Code, w.Body)
		}
		if cc := w.Header().Get("Cache-Control"); strings.Contains(cc, "public") {
			t.Errorf("%s: Cache-Control %q with a token, want private", target, cc)
		}
	}
	if w := get(t, h, "/healthz"); w.Code != 200 || w.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz without the token: %d %q", w.Code, w.Body)
	}
	// CORS preflights carry no credentials: they pass without the token.
	req := httptest.NewRequest(http.MethodOptions, "/api/v1/runs", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", w.Code, w.Header())
	}
}

func TestBadParameters(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{Files: true})
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	run := f.runIDs[0]
	for _, c := range []struct{ target, arg string }{
		{"/api/v1/datasets/t.lance/rows?version=0", "version"},
		{"/api/v1/datasets/t.lance/rows?version=-1", "version"},
		{"/api/v1/datasets/t.lance/rows?version=x", "version"},
		{"/api/v1/datasets/t.lance/rows?version=99999999999999999999", "version"},
		{"/api/v1/datasets/t.lance/rows?version=1&version=2", "version"},
		{"/api/v1/datasets/t.lance/rows?version=1&tag=first", "version"},
		{"/api/v1/datasets/t.lance/rows?tag=", "tag"},
		{"/api/v1/datasets/t.lance/rows?limit=-1", "limit"},
		{"/api/v1/datasets/t.lance/rows?limit=1.5", "limit"},
		{"/api/v1/datasets/t.lance/rows?limit=99999999999999999999", "limit"},
		{"/api/v1/datasets/t.lance/rows?columns=id,,name", "columns"},
		{"/api/v1/datasets/t.lance/rows?columns=", "columns"},
		{"/api/v1/datasets/t.lance/rows?columns=nope", "columns"},
		{"/api/v1/datasets/t.lance/rows?columns=id,id", "columns"},
		{"/api/v1/datasets/t.lance/rows?where=id%20%3E", "where"},
		{"/api/v1/datasets/t.lance/rows?where=nope%20%3E%201", "where"},
		{"/api/v1/datasets/t.lance/rows?where=", "where"},
		{"/api/v1/datasets/t.lance/rows?format=csv", "format"},
		{"/api/v1/datasets/t.lance/rows?format=", "format"},
		{"/api/v1/datasets/t.lance/rows?colums=id", "colums"},
		{"/api/v1/datasets/t.lance/rows?%zz", "query"},
		{"/api/v1/datasets/t.lance/info?limit=1", "limit"},
		{"/api/v1/datasets/t.lance/info?version=0", "version"},
		{"/api/v1/datasets/t.lance/log?version=1", "version"},
		{"/api/v1/runs?experiment=", "experiment"},
		{"/api/v1/runs?experiment=a&experiment=b", "experiment"},
		{"/api/v1/runs?status=", "status"},
		{"/api/v1/runs?status=finshed", "status"},
		{"/api/v1/runs?archived=yes", "archived"},
		{"/api/v1/runs?archived=", "archived"},
		{"/api/v1/runs?tag=", "tag"},
		{"/api/v1/runs?param=lr", "param"},
		{"/api/v1/runs?param=optimizer.lr%3C%3C1", "param"},
		{"/api/v1/runs?param=amp%3Etrue", "param"},
		{"/api/v1/runs?param=", "param"},
		{"/api/v1/runs?sort=name", "sort"},
		{"/api/v1/runs/" + run + "?json=1", "json"},
		{"/api/v1/runs/" + run + "/params?x=1", "x"},
		{"/api/v1/runs/" + run + "/series?x=1", "x"},
		{"/api/v1/series/points", "ids"},
		{"/api/v1/series/points?ids=", "ids"},
		{"/api/v1/series/points?ids=abc", "ids"},
		{"/api/v1/series/points?ids=1,,2", "ids"},
		{"/api/v1/series/points?ids=-1", "ids"},
		{"/api/v1/series/points?ids=%2B1", "ids"},
		{"/api/v1/series/points?ids=0", "ids"},
		{"/api/v1/series/points?ids=18446744073709551616", "ids"},
		{"/api/v1/series/points?ids=" + strings.Repeat("1,", 1000) + "1", "ids"},
		{"/api/v1/series/points?ids=" + id + "&max_points=-1", "max_points"},
		{"/api/v1/series/points?ids=" + id + "&max_points=x", "max_points"},
		{"/api/v1/series/points?ids=" + id + "&max_points=2", "max_points"},
		{"/api/v1/series/points?ids=" + id + "&fields=steps,steps", "fields"},
		{"/api/v1/series/points?ids=" + id + "&max_points=3", "max_points"},
		{"/api/v1/series/points?ids=" + id + "&max_points=100000000000", "max_points"},
		{"/api/v1/series/points?ids=" + id + "&from_step=x", "from_step"},
		{"/api/v1/series/points?ids=" + id + "&to_step=1e3", "to_step"},
		{"/api/v1/series/points?ids=" + id + "&from_step=10&to_step=5", "to_step"},
		{"/api/v1/series/points?ids=" + id + "&from_time=yesterday", "from_time"},
		{"/api/v1/series/points?ids=" + id + "&to_time=2026-01-01", "to_time"},
		{"/api/v1/series/points?ids=" + id + "&from_time=2026-01-02T00:00:00Z&to_time=2026-01-01T00:00:00Z", "to_time"},
		{"/api/v1/series/points?ids=" + id + "&maxpoints=10", "maxpoints"},
		{"/api/v1/stats", "ids"},
		{"/api/v1/stats?ids=1&max_points=3", "max_points"},
		{"/api/v1/versions?x=1", "x"},
		{"/files/t.lance/_versions/18446744073709551614.manifest?x=1", "x"},
	} {
		w := get(t, h, c.target)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", c.target, w.Code, w.Body)
			continue
		}
		e := errorOf(t, w)
		if e.Error.Code != CodeInvalid || !strings.HasPrefix(e.Error.Message, c.arg+":") {
			t.Errorf("%s: error %+v does not name %q", c.target, e.Error, c.arg)
		}
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	for _, target := range []string{
		"/api/v1/datasets/nope.lance/info", "/api/v1/datasets/nope.lance/rows", "/api/v1/datasets/nope.lance/log",
		"/api/v1/datasets/t.lance/info?version=9", "/api/v1/datasets/t.lance/rows?version=9", "/api/v1/datasets/t.lance/info?tag=nope",
		"/api/v1/runs/nope", "/api/v1/runs/nope/params", "/api/v1/runs/nope/series", "/api/v1/series/points?ids=12345",
		"/api/v1/stats?ids=12345", "/api/v1/nope", "/api/v1/runs/" + f.runIDs[0] + "/nope", "/api/v1/datasets/t.lance/nope",
		"/files/t.lance/_versions/1.manifest", "/files/x", "/", "/wasm/kv0.wasm",
	} {
		w := get(t, h, target)
		if w.Code != http.StatusNotFound || errorOf(t, w).Error.Code != CodeNotFound {
			t.Errorf("%s: %d %s, want 404", target, w.Code, w.Body)
		}
	}
	// The static folders' 404 says how to get them; a long path is not
	// echoed whole.
	for target, want := range map[string]string{
		"/":                                    "this server serves no dashboard at /: build it (make web) or give kv0 serve --web DIR",
		"/wasm/kv0.wasm":                       "this server serves no WebAssembly module at /wasm/: build it (make wasm) or give kv0 serve --wasm DIR",
		"/api/v1/" + strings.Repeat("x", 5000): "no such route /api/v1/" + strings.Repeat("x", maxEcho-len("/api/v1/")) + "… (5008 bytes)",
		"/api/v1/datasets/" + strings.Repeat("y", 3000) + ".lance/info": `no dataset at "` + strings.Repeat("y", maxEcho) + `… (3006 bytes)"`,
	} {
		if msg := errorOf(t, get(t, h, target)).Error.Message; msg != want {
			t.Errorf("%.40s: message %q, want %q", target, msg, want)
		}
	}
	// Cut at a rune boundary.
	if got := clipped([]any{"a" + strings.Repeat("é", 3000), 7})[0]; got != "a"+strings.Repeat("é", maxEcho/2-1)+"… (6001 bytes)" {
		t.Errorf("clipped: %q", got)
	}
	// A root without a repository answers the tracking routes 404.
	h = New(f.st, "nested", Options{})
	for _, target := range []string{"/api/v1/runs", "/api/v1/versions", "/api/v1/runs/x"} {
		if w := get(t, h, target); w.Code != http.StatusNotFound {
			t.Errorf("no repository, %s: %d %s", target, w.Code, w.Body)
		}
	}
	if w := get(t, h, "/api/v1/datasets/a/z.lance/info"); w.Code != 200 {
		t.Errorf("datasets under a sub-root: %d %s", w.Code, w.Body)
	}
	// Other methods than GET, HEAD and OPTIONS.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/runs", strings.NewReader("{}"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed || errorOf(t, w).Error.Code != CodeMethodNotAllowed {
		t.Errorf("POST: %d %s", w.Code, w.Body)
	}
}

func TestRowsFormats(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	ctx := context.Background()
	for _, q := range []string{"", "version=1", "tag=first", "columns=score,id&limit=7", "where=id%20%3E%3D%20150&columns=name",
		"limit=0", "where=id%20%3C%200", "limit=20&where=name%20IS%20NULL", "where=id%20IN%20(1,%2050,%20160)&columns=id,score"} {
		d, err := lance.Open(ctx, f.st, "t.lance", openOpts(q))
		if err != nil {
			t.Fatal(err)
		}
		vals := parseQ(q)
		opts := inspect.RowsOptions{Limit: -1, Where: vals.Get("where")}
		if c := vals.Get("columns"); c != "" {
			opts.Columns = strings.Split(c, ",")
		}
		if l := vals.Get("limit"); l != "" {
			opts.Limit, _ = strconv.ParseInt(l, 10, 64)
		}
		var want bytes.Buffer
		rows, err := inspect.ScanRows(ctx, d, opts)
		if err != nil {
			t.Fatal(err)
		}
		jw := jsonl.NewWriter(&want)
		for rows.Next() {
			if err := jw.Write(rows.Record()); err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
		w := get(t, h, "/api/v1/datasets/t.lance/rows?"+q)
		if w.Code != 200 || w.Header().Get("Content-Type") != contentJSONL || w.Body.String() != want.String() {
			t.Errorf("%s: %d %s\n%.300s\nwant\n%.300s", q, w.Code, w.Header().Get("Content-Type"), w.Body, want.String())
		}
		// Arrow: the same rows.
		w = get(t, h, "/api/v1/datasets/t.lance/rows?format=arrow&"+q)
		if w.Code != 200 || w.Header().Get("Content-Type") != contentArrow {
			t.Fatalf("%s arrow: %d %s", q, w.Code, w.Body)
		}
		rd, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
		if err != nil {
			t.Fatalf("%s arrow: %v", q, err)
		}
		var got bytes.Buffer
		aw := jsonl.NewWriter(&got)
		for rd.Next() {
			if err := aw.Write(rd.RecordBatch()); err != nil {
				t.Fatal(err)
			}
		}
		if rd.Err() != nil || got.String() != want.String() {
			t.Errorf("%s arrow: %v\n%.300s\nwant\n%.300s", q, rd.Err(), got.String(), want.String())
		}
		rd.Release()
	}
}

func parseQ(q string) url.Values {
	v, _ := url.ParseQuery(q)
	return v
}

func openOpts(q string) lance.OpenOptions {
	v, _ := parseQuery(q, []string{"version", "tag", "columns", "limit", "where"}, nil)
	o, _ := v.openOptions()
	return o
}

func TestCaching(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	h := New(cs, "", Options{Files: true})
	for _, target := range []string{"/api/v1/datasets/t.lance/rows?version=1", "/api/v1/datasets/t.lance/info?tag=first",
		"/api/v1/datasets/t.lance/rows?tag=first&format=arrow&columns=id"} {
		// Not immutable: a cleanup or purge may remove the version, a
		// dataset written again gives it other contents.
		w := get(t, h, target)
		etag := w.Header().Get("ETag")
		if w.Code != 200 || w.Header().Get("Cache-Control") != "public, max-age=1" || etag == "" {
			t.Fatalf("%s: %d %v", target, w.Code, w.Header())
		}
		before := cs.reads.Load()
		w = get(t, h, target, "If-None-Match", etag)
		if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("ETag") != etag {
			t.Errorf("%s revalidated: %d %q", target, w.Code, w.Body)
		}
		if n := cs.reads.Load() - before; n != 0 {
			t.Errorf("%s: a 304 read %d objects (want the version's manifest and the tag only)", target, n)
		}
		if w := get(t, h, target, "If-None-Match", `"other"`); w.Code != 200 {
			t.Errorf("%s with another ETag: %d", target, w.Code)
		}
	}
	// Latest answers: short max-age, an ETag of the versions read, 304
	// without reading data, a new ETag once the data changed.
	id := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	latest := []string{"/api/v1/datasets/t.lance/rows", "/api/v1/datasets/t.lance/info", "/api/v1/datasets/t.lance/log",
		"/api/v1/runs", "/api/v1/runs/" + f.runIDs[0], "/api/v1/runs/" + f.runIDs[0] + "/series", "/api/v1/series/points?ids=" + id,
		"/api/v1/stats?ids=" + id, "/api/v1/versions"}
	etags := map[string]string{}
	for _, target := range latest {
		w := get(t, h, target)
		etags[target] = w.Header().Get("ETag")
		cc := w.Header().Get("Cache-Control")
		if w.Code != 200 || etags[target] == "" || (cc != "public, max-age=1" && !(target == "/api/v1/versions" && cc == "no-cache")) {
			t.Fatalf("%s: %d %v", target, w.Code, w.Header())
		}
		before := cs.reads.Load()
		w = get(t, h, target, "If-None-Match", etags[target])
		if w.Code != http.StatusNotModified {
			t.Errorf("%s revalidated: %d", target, w.Code)
		}
		if n := cs.reads.Load() - before; n != 0 {
			t.Errorf("%s: a 304 read %d objects (want version probes only: listings, stats, the hint, manifests, tags)", target, n)
		}
	}
	ctx := context.Background()
	d, err := lance.Open(ctx, f.st, "t.lance", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Append(ctx, lance.Batches(batch(500, 3)), lance.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.ResumeRun(ctx, f.runIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Track(5, "loss"); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, target := range latest {
		if target == "/api/v1/datasets/t.lance/log" {
			continue // checked below with a tag
		}
		w := get(t, h, target, "If-None-Match", etags[target])
		if w.Code != 200 || w.Header().Get("ETag") == etags[target] {
			t.Errorf("%s after a change: %d, ETag %s (was %s)", target, w.Code, w.Header().Get("ETag"), etags[target])
		}
	}
	log := "/api/v1/datasets/t.lance/log"
	e1 := get(t, h, log).Header().Get("ETag")
	d, _ = lance.Open(ctx, f.st, "t.lance", lance.OpenOptions{})
	if err := d.CreateTag(ctx, "second", 2); err != nil {
		t.Fatal(err)
	}
	if w := get(t, h, log, "If-None-Match", e1); w.Code != 200 || !strings.Contains(w.Body.String(), `"second"`) {
		t.Errorf("log after a new tag: %d %s", w.Code, w.Body)
	}
}

func TestCORS(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ opt, want string }{{"", "*"}, {"https://dash.example", "https://dash.example"}} {
		h := New(f.st, "", Options{AllowOrigin: c.opt, Files: true})
		for _, target := range []string{"/api/v1/runs", "/api/v1/nope", "/files/t.lance/_versions/18446744073709551614.manifest", "/healthz"} {
			w := get(t, h, target, "Origin", "https://dash.example")
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != c.want {
				t.Errorf("%s (%q): Allow-Origin %q, want %q", target, c.opt, got, c.want)
			}
			exp := w.Header().Get("Access-Control-Expose-Headers")
			for _, hd := range []string{"ETag", "Content-Range", "Content-Length"} {
				if !strings.Contains(exp, hd) {
					t.Errorf("%s: Expose-Headers %q lacks %s", target, exp, hd)
				}
			}
		}
	}
	h := New(f.st, "", Options{AllowOrigin: "-"})
	if w := get(t, h, "/api/v1/runs"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("AllowOrigin -: header %q", w.Header().Get("Access-Control-Allow-Origin"))
	}
}

// TestStreamCutHalfWay checks that a store failing in the middle of a
// stream breaks the chunked body: the client gets an error, never a body
// that ends as if complete, and what it got is a prefix of the full answer.
func TestStreamCutHalfWay(t *testing.T) {
	f := newFixture(t)
	full := func(format string) []byte {
		w := get(t, New(f.st, "", Options{}), "/api/v1/datasets/many.lance/rows?format="+format)
		if w.Code != 200 {
			t.Fatalf("full %s: %d", format, w.Code)
		}
		return w.Body.Bytes()
	}
	for _, format := range []string{"jsonl", "arrow"} {
		want := full(format)
		for _, cut := range []int64{1, 3} {
			fs := &faultStore{Store: f.st, err: errInjected}
			srv := httptest.NewServer(New(fs, "", Options{}))
			// Open the dataset (manifest, no data) and let the first data
			// file's reads pass, then fail.
			fs.okReads.Store(cut)
			fs.armed.Store(true)
			resp, err := http.Get(srv.URL + "/api/v1/datasets/many.lance/rows?format=" + format)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			srv.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d (%s): the failure came too early to test a cut", format, resp.StatusCode, got)
			}
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s cut after %d reads: body read ended with %v, want an unexpected EOF", format, cut, err)
			}
			if len(got) >= len(want) || !bytes.Equal(got, want[:len(got)]) {
				t.Errorf("%s: got %d bytes, not a strict prefix of the %d of the full answer", format, len(got), len(want))
			}
			if format == "jsonl" && len(got) == 0 {
				t.Errorf("jsonl: no rows arrived before the cut")
			}
		}
	}
	// A store failing before the first row answers an error status.
	fs := &faultStore{Store: f.st, err: errInjected}
	fs.armed.Store(true)
	h := New(fs, "", Options{})
	w := get(t, h, "/api/v1/datasets/many.lance/rows")
	if w.Code != http.StatusBadGateway || errorOf(t, w).Error.Code != CodeStoreFailed {
		t.Errorf("failure before the first row: %d %s", w.Code, w.Body)
	}
	if w.Header().Get("ETag") != "" || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("an error answer keeps caching headers: %v", w.Header())
	}
}

func TestErrorStatuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fs.ErrPermission, 403, CodeForbidden},
		{errInjected, 502, CodeStoreFailed},
		{store.ErrShortObject, 422, CodeCorrupt},
	} {
		fst := &faultStore{Store: f.st, err: c.err}
		fst.armed.Store(true)
		w := get(t, New(fst, "", Options{}), "/api/v1/datasets/t.lance/rows")
		if w.Code != c.status || errorOf(t, w).Error.Code != c.code {
			t.Errorf("%v: %d %s, want %d %s", c.err, w.Code, w.Body, c.status, c.code)
		}
	}
	// A panic in a handler: 500 with the error body, and the handler
	// keeps serving.
	var logged []string
	h := New(f.st, "", Options{Web: panicFS{}, Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	w := get(t, h, "/index.html")
	if w.Code != 500 || errorOf(t, w).Error.Code != CodeInternal || len(logged) == 0 || !strings.Contains(logged[0], "injected panic") {
		t.Errorf("panic: %d %s, logged %q", w.Code, w.Body, logged)
	}
	if strings.Contains(w.Body.String(), "goroutine") || strings.Contains(w.Body.String(), "injected") {
		t.Errorf("the panic leaks into the answer: %s", w.Body)
	}
	if w := get(t, h, "/api/v1/datasets/t.lance/rows?limit=1"); w.Code != 200 {
		t.Errorf("after a panic: %d", w.Code)
	}
	// Corrupt data: a data file overwritten with garbage; 422 naming it.
	d, err := lance.Open(ctx, f.st, "t.lance", lance.OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	key := "t.lance/" + d.Fragments()[0].Files[0].Path
	info, _ := f.st.Stat(ctx, key)
	if err := f.st.Put(ctx, key, bytes.Repeat([]byte{0xAB}, int(info.Size))); err != nil {
		t.Fatal(err)
	}
	w = get(t, New(f.st, "", Options{}), "/api/v1/datasets/t.lance/rows?version=1")
	if w.Code != http.StatusUnprocessableEntity || errorOf(t, w).Error.Code != CodeCorrupt || !strings.Contains(w.Body.String(), d.Fragments()[0].Files[0].Path) {
		t.Errorf("corrupt data file: %d %s", w.Code, w.Body)
	}
	// Unsupported: a manifest naming a data file version kv0 does not read
	// is covered by the lance-samples v2_2 fixture in native/cmd/kv0.
}

func TestFiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h := New(f.st, "", Options{Files: true})
	d, _ := lance.Open(ctx, f.st, "t.lance", lance.OpenOptions{})
	dataKey := "t.lance/" + d.Fragments()[0].Files[0].Path
	info, _ := f.st.Stat(ctx, dataKey)
	content := make([]byte, info.Size)
	if err := f.st.ReadAt(ctx, dataKey, content, 0); err != nil {
		t.Fatal(err)
	}
	size := int64(len(content))
	w := get(t, h, "/files/"+dataKey)
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), content) || w.Header().Get("Content-Length") != strconv.FormatInt(size, 10) ||
		w.Header().Get("Cache-Control") != "public, max-age=1" || w.Header().Get("Accept-Ranges") != "bytes" {
		t.Fatalf("whole file: %d %v", w.Code, w.Header())
	}
	etag := w.Header().Get("ETag")
	for _, c := range []struct {
		rng        string
		start, end int64 // want [start, end); end 0: the whole file with 200
	}{
		{"bytes=0-9", 0, 10}, {"bytes=10-", 10, size}, {"bytes=-16", size - 16, size}, {"bytes=5-5", 5, 6},
		{fmt.Sprintf("bytes=%d-%d", size-3, size+100), size - 3, size}, {"bytes=-999999", 0, size},
		{"bytes=0-1,4-5", 0, 0}, {"items=0-1", 0, 0}, {"bytes=9-3", 0, 0}, {"bytes=x-", 0, 0},
	} {
		w := get(t, h, "/files/"+dataKey, "Range", c.rng)
		if c.end == 0 {
			if w.Code != 200 || int64(w.Body.Len()) != size {
				t.Errorf("%s: %d with %d bytes, want the whole file", c.rng, w.Code, w.Body.Len())
			}
			continue
		}
		wantCR := fmt.Sprintf("bytes %d-%d/%d", c.start, c.end-1, size)
		if w.Code != 206 || !bytes.Equal(w.Body.Bytes(), content[c.start:c.end]) || w.Header().Get("Content-Range") != wantCR ||
			w.Header().Get("Content-Length") != strconv.FormatInt(c.end-c.start, 10) {
			t.Errorf("%s: %d %v, %d bytes", c.rng, w.Code, w.Header(), w.Body.Len())
		}
	}
	for _, rng := range []string{fmt.Sprintf("bytes=%d-", size), "bytes=-0"} {
		w := get(t, h, "/files/"+dataKey, "Range", rng)
		if w.Code != 416 || w.Header().Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Errorf("%s: %d %v", rng, w.Code, w.Header())
		}
	}
	if w := get(t, h, "/files/"+dataKey, "Range", "bytes=0-3", "If-Range", `"stale"`); w.Code != 200 {
		t.Errorf("If-Range with another ETag: %d, want the whole file", w.Code)
	}
	if w := get(t, h, "/files/"+dataKey, "If-None-Match", etag); w.Code != 304 {
		t.Errorf("If-None-Match: %d", w.Code)
	}
	// A mutable object (the hint) gets an ETag of its content and no-cache.
	hint := "t.lance/_versions/latest_version_hint.json"
	if _, err := f.st.Stat(ctx, hint); err == nil {
		w := get(t, h, "/files/"+hint)
		if w.Code != 200 || w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("hint: %d %v", w.Code, w.Header())
		}
	}
	// No listing: a folder is no object.
	for _, target := range []string{"/files/t.lance", "/files/t.lance/_versions"} {
		if w := get(t, h, target); w.Code != 404 {
			t.Errorf("%s: %d, want 404 (no listing)", target, w.Code)
		}
	}
	if w := get(t, New(f.st, "", Options{}), "/files/"+dataKey); w.Code != 404 {
		t.Errorf("files not enabled: %d", w.Code)
	}
	// HEAD: the headers, no body.
	req := httptest.NewRequest(http.MethodHead, "/files/"+dataKey, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.FormatInt(size, 10) {
		t.Errorf("HEAD: %d %d %v", rec.Code, rec.Body.Len(), rec.Header())
	}
	// A large object streams in chunks, and a range across chunks is exact.
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*fileChunk/16+5)
	if err := f.st.Put(ctx, "blob/data/big.bin", big); err != nil {
		t.Fatal(err)
	}
	w = get(t, h, "/files/blob/data/big.bin", "Range", fmt.Sprintf("bytes=%d-%d", fileChunk-7, 2*fileChunk+9))
	if w.Code != 206 || !bytes.Equal(w.Body.Bytes(), big[fileChunk-7:2*fileChunk+10]) {
		t.Errorf("range across chunks: %d, %d bytes", w.Code, w.Body.Len())
	}
}

func TestStatic(t *testing.T) {
	f := newFixture(t)
	web := fstest.MapFS{
		"index.html":     {Data: []byte("<p>dash</p>"), ModTime: time.Unix(1, 0)},
		"app/main.js":    {Data: []byte("console.log(1)")},
		"app/index.html": {Data: []byte("<p>app</p>")},
	}
	wasm := fstest.MapFS{
		"kv0.wasm":    {Data: []byte("\x00asm raw")},
		"kv0.wasm.br": {Data: []byte("brotli bytes")},
		"kv0.mjs":     {Data: []byte("export {}")},
	}
	h := New(f.st, "", Options{Web: web, Wasm: wasm})
	for _, c := range []struct{ target, body, ctype string }{
		{"/", "<p>dash</p>", "text/html; charset=utf-8"},
		{"/index.html", "<p>dash</p>", "text/html; charset=utf-8"},
		{"/app/main.js", "console.log(1)", "text/javascript; charset=utf-8"},
		{"/app/", "<p>app</p>", "text/html; charset=utf-8"},
		{"/app", "<p>app</p>", "text/html; charset=utf-8"},
		{"/wasm/kv0.mjs", "export {}", "text/javascript; charset=utf-8"},
		{"/wasm/kv0.wasm", "\x00asm raw", "application/wasm"},
	} {
		w := get(t, h, c.target)
		if w.Code != 200 || w.Body.String() != c.body || w.Header().Get("Content-Type") != c.ctype {
			t.Errorf("%s: %d %q %q", c.target, w.Code, w.Body, w.Header().Get("Content-Type"))
		}
	}
	w := get(t, h, "/wasm/kv0.wasm", "Accept-Encoding", "gzip, br")
	if w.Code != 200 || w.Body.String() != "brotli bytes" || w.Header().Get("Content-Encoding") != "br" || w.Header().Get("Content-Type") != "application/wasm" {
		t.Errorf("precompressed: %d %q %v", w.Code, w.Body, w.Header())
	}
	for _, target := range []string{"/nope.js", "/wasm/nope", "/wasm/"} {
		if w := get(t, h, target); w.Code != 404 {
			t.Errorf("%s: %d", target, w.Code)
		}
	}
	h = New(f.st, "", Options{})
	for _, target := range []string{"/", "/wasm/kv0.wasm"} {
		w := get(t, h, target)
		if w.Code != 404 || !strings.Contains(errorOf(t, w).Error.Message, "build it (make w") {
			t.Errorf("%s without the folder: %d %s", target, w.Code, w.Body)
		}
	}
}

func TestPointsAndStats(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	ctx := context.Background()
	r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id0, id2 := f.series["0/loss"], f.series["2/loss"]
	for _, c := range []struct {
		q    string
		opts tracking.ReadOptions
		max  int
	}{
		{"", tracking.ReadOptions{}, 1000},
		{"&max_points=0", tracking.ReadOptions{}, 0},
		{"&max_points=50", tracking.ReadOptions{}, 50},
		{"&max_points=5000", tracking.ReadOptions{}, 5000},
		{"&max_points=0&from_step=100&to_step=200", tracking.ReadOptions{Steps: &tracking.StepRange{From: 100, To: 200}}, 0},
		{"&max_points=0&from_step=2990", tracking.ReadOptions{Steps: &tracking.StepRange{From: 2990, To: 1<<63 - 1}}, 0},
		{"&max_points=0&from_time=2026-03-04T05:06:08Z&to_time=2026-03-04T05:06:09.5Z", tracking.ReadOptions{Time: &tracking.TimeRange{
			From: time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC), To: time.Date(2026, 3, 4, 5, 6, 9, 5e8, time.UTC)}}, 0},
	} {
		target := fmt.Sprintf("/api/v1/series/points?ids=%d,%d%s", id0, id2, c.q)
		w := get(t, h, target)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", target, w.Code, w.Body)
		}
		var got []struct {
			SeriesID   string    `json:"series_id"`
			Steps      []int64   `json:"steps"`
			Values     []any     `json:"values"`
			Timestamps []float64 `json:"timestamps"`
			Epochs     []*int64  `json:"epochs"`
			Mins       []any     `json:"mins"`
			Maxs       []any     `json:"maxs"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		all, err := r.ReadMany(ctx, []tracking.SeriesID{id0, id2}, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		down := c.opts
		down.MaxPoints = c.max
		data, err := r.ReadMany(ctx, []tracking.SeriesID{id0, id2}, down)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("%s: %d series", target, len(got))
		}
		for i, m := range data {
			g := got[i]
			if g.SeriesID != strconv.FormatUint(uint64(m.SeriesID), 10) {
				t.Errorf("series_id %q", g.SeriesID)
			}
			n := m.Len()
			isDown := n < all[i].Len()
			if len(g.Steps) != n || len(g.Values) != n || len(g.Timestamps) != n || len(g.Epochs) != n {
				t.Fatalf("%s: lengths %d %d %d %d, want %d", target, len(g.Steps), len(g.Values), len(g.Timestamps), len(g.Epochs), n)
			}
			if isDown != (g.Mins != nil) || isDown != (g.Maxs != nil) || len(g.Mins) != len(g.Maxs) || g.Mins != nil && len(g.Mins) != n {
				t.Fatalf("%s: mins/maxs present %v (%d, %d), downsampled %v", target, g.Mins != nil, len(g.Mins), len(g.Maxs), isDown)
			}
			for k := 0; k < n; k++ {
				if g.Steps[k] != m.Steps[k] || !sameJSONFloat(g.Values[k], m.Values[k]) {
					t.Fatalf("%s point %d: step %d value %v, want %d %v", target, k, g.Steps[k], g.Values[k], m.Steps[k], m.Values[k])
				}
				if want := float64(m.Timestamps[k].UnixMicro()) / 1000; g.Timestamps[k] != want {
					t.Fatalf("%s point %d: timestamp %v, want %v", target, k, g.Timestamps[k], want)
				}
				if (m.Epochs[k] == tracking.NoEpoch) != (g.Epochs[k] == nil) || g.Epochs[k] != nil && *g.Epochs[k] != m.Epochs[k] {
					t.Fatalf("%s point %d: epoch %v, want %d", target, k, g.Epochs[k], m.Epochs[k])
				}
				if !isDown {
					continue
				}
				// The band: the finite extremes of the raw points of the
				// bucket holding the point (the value itself outside any).
				lo, hi := m.Values[k], m.Values[k]
				for _, b := range m.Buckets {
					if m.Steps[k] < b.FirstStep || m.Steps[k] > b.LastStep {
						continue
					}
					lo, hi = math.Inf(1), math.Inf(-1)
					for x, st := range all[i].Steps {
						if v := all[i].Values[x]; st >= b.FirstStep && st <= b.LastStep && !math.IsNaN(v) && !math.IsInf(v, 0) {
							lo, hi = min(lo, v), max(hi, v)
						}
					}
				}
				if !sameJSONFloat(g.Mins[k], lo) || !sameJSONFloat(g.Maxs[k], hi) {
					t.Fatalf("%s point %d: band %v..%v, want %v..%v", target, k, g.Mins[k], g.Maxs[k], lo, hi)
				}
			}
		}
	}
	// Stats: one per id, in order, nil-free for series with points.
	w := get(t, h, fmt.Sprintf("/api/v1/stats?ids=%d,%d,%d", id2, id0, id2))
	var stats []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &stats); err != nil || len(stats) != 3 {
		t.Fatalf("stats: %v %s", err, w.Body)
	}
	want, err := r.SeriesStats(ctx, []tracking.SeriesID{id0, id2})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []tracking.SeriesID{id2, id0, id2} {
		if stats[i]["series_id"] != strconv.FormatUint(uint64(id), 10) || stats[i]["count"] != float64(want[id].Count) ||
			stats[i]["last_step"] != float64(want[id].LastStep) || stats[i]["max"] != want[id].Max || stats[i]["non_finite"] != float64(1) {
			t.Errorf("stats[%d] = %v, want %+v", i, stats[i], want[id])
		}
	}
}

// sameJSONFloat compares a decoded JSON value (a number or "NaN",
// "Infinity", "-Infinity") with a float.
func sameJSONFloat(v any, f float64) bool {
	switch x := v.(type) {
	case float64:
		return x == f
	case string:
		return string(jsonl.AppendFloat(nil, f, 64)) == strconv.Quote(x)
	}
	return false
}

func TestRunsFilters(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	for _, c := range []struct {
		q    string
		want []int // indexes of f.runIDs
	}{
		{"", []int{0, 1, 2}},
		{"experiment=a", []int{0, 1}},
		{"tag=x", []int{0, 2}},
		{"tag=x&tag=t", []int{0, 2}},
		{"tag=x&tag=y", nil},
		{"archived=true", []int{1}},
		{"archived=false", []int{0, 2}},
		{"param=optimizer.lr%3C0.01", []int{1, 2}},
		{"param=optimizer.lr%3C0.01&param=optimizer.lr%3E0.002", []int{2}},
		{"param=model%3Dm0", []int{0}},
		{"status=finished&experiment=b", []int{2}},
		{"status=running", nil},
	} {
		w := get(t, h, "/api/v1/runs?"+c.q)
		var got []tracking.RunInfo
		if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
			t.Fatalf("%s: %d %v %s", c.q, w.Code, err, w.Body)
		}
		var ids, want []string
		for _, in := range got {
			ids = append(ids, in.ID)
		}
		for _, i := range c.want {
			want = append(want, f.runIDs[i])
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("%s: runs %v, want %v", c.q, ids, want)
		}
	}
	// By name, as the CLI resolves it.
	if w := get(t, h, "/api/v1/runs/run-2"); w.Code != 200 || !strings.Contains(w.Body.String(), f.runIDs[2]) {
		t.Errorf("run by name: %d %s", w.Code, w.Body)
	}
}

// panicFS panics on every use, standing for a bug in a handler.
type panicFS struct{}

func (panicFS) Open(string) (fs.File, error) { panic("injected panic") }

// FuzzCleanPath checks that every path cleanPath accepts is a clean key
// under the root whatever the spelling, and that it never panics.
func FuzzCleanPath(f *testing.F) {
	for _, p := range append(traversals, "t.lance", "a/b/c.lance", "x%20y", "%41") {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := cleanPath("path", raw)
		if err != nil {
			if classify(err).status != http.StatusBadRequest {
				t.Fatalf("%q: %v is not a 400", raw, err)
			}
			return
		}
		if store.ValidateKey(key) != nil || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") {
			t.Fatalf("%q -> %q is not a clean key", raw, key)
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("%q -> %q has segment %q", raw, key, seg)
			}
		}
	})
}

// FuzzParseRange checks that an accepted range lies inside the object.
func FuzzParseRange(f *testing.F) {
	for _, r := range []string{"bytes=0-9", "bytes=10-", "bytes=-5", "bytes=5-1", "bytes=0-1,2-3", "bytes=-0", "bytes=99999999999999999999-"} {
		f.Add(r, int64(100))
	}
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 {
			size = -size
		}
		if size < 0 {
			return
		}
		start, end, ok, satisfiable := parseRange(v, size)
		if ok && satisfiable && (start < 0 || end > size || start >= end) {
			t.Fatalf("%q of %d bytes: [%d, %d)", v, size, start, end)
		}
	})
}

// TestConcurrentWrites reads while a writer commits: a dataset's strong
// ETag always labels the same body, each reader's view only moves forward
// (rows, points and versions never go back), and nothing fails.
func TestConcurrentWrites(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h := New(f.st, "", Options{})
	sid := strconv.FormatUint(uint64(f.series["0/loss"]), 10)
	done := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		defer close(werr)
		r, err := tracking.OpenRepo(ctx, f.st, "", tracking.RepoOptions{FlushInterval: -1})
		if err != nil {
			werr <- err
			return
		}
		defer r.Close()
		run, err := r.ResumeRun(ctx, f.runIDs[0])
		if err != nil {
			werr <- err
			return
		}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			d, err := lance.Open(ctx, f.st, "t.lance", lance.OpenOptions{})
			if err == nil {
				_, err = d.Append(ctx, lance.Batches(batch(1000+i*3, 3)), lance.WriteOptions{})
			}
			if err == nil {
				step := int64(5000 + i)
				err = run.Track(float64(i), "loss", tracking.TrackOptions{Step: &step})
			}
			if err == nil {
				err = r.Flush(ctx)
			}
			if err != nil {
				werr <- err
				return
			}
		}
	}()
	var mu sync.Mutex
	bodies := map[string]string{} // strong ETag -> body
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lastRows, lastPoints int
			var lastVersions Versions
			for i := 0; i < 20; i++ {
				w := get(t, h, "/api/v1/datasets/t.lance/rows?columns=id")
				if w.Code != 200 {
					t.Errorf("rows: %d %s", w.Code, w.Body)
					return
				}
				mu.Lock()
				if b, ok := bodies[w.Header().Get("ETag")]; ok && b != w.Body.String() {
					t.Errorf("ETag %s labels two bodies", w.Header().Get("ETag"))
				}
				bodies[w.Header().Get("ETag")] = w.Body.String()
				mu.Unlock()
				n := strings.Count(w.Body.String(), "\n")
				if n < lastRows {
					t.Errorf("rows went back from %d to %d", lastRows, n)
				}
				lastRows = n
				w = get(t, h, "/api/v1/series/points?max_points=0&ids="+sid)
				var pts []struct {
					Steps []int64 `json:"steps"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &pts); w.Code != 200 || err != nil {
					t.Errorf("points: %d %v", w.Code, err)
					return
				}
				if len(pts[0].Steps) < lastPoints {
					t.Errorf("points went back from %d to %d", lastPoints, len(pts[0].Steps))
				}
				lastPoints = len(pts[0].Steps)
				var v Versions
				w = get(t, h, "/api/v1/versions")
				if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Metrics < lastVersions.Metrics || v.Runs < lastVersions.Runs {
					t.Errorf("versions %+v after %+v (%v)", v, lastVersions, err)
				}
				lastVersions = v
			}
		}()
	}
	wg.Wait()
	close(done)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if len(bodies) < 2 {
		t.Errorf("the readers saw %d versions of the rows; the writer did not overlap them", len(bodies))
	}
}

// gateStore holds back reads of data files, once okReads of them passed,
// until gate is closed.
type gateStore struct {
	store.Store
	okReads atomic.Int64
	gate    chan struct{}
}

func (g *gateStore) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if strings.Contains(key, "/data/") && g.okReads.Add(-1) < 0 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.ReadAt(ctx, key, p, off)
}

// TestRowsStream checks that rows leave as they are decoded: the first
// ones arrive while the store still holds back the rest of the table.
func TestRowsStream(t *testing.T) {
	f := newFixture(t)
	for _, format := range []string{"jsonl", "arrow"} {
		want := get(t, New(f.st, "", Options{}), "/api/v1/datasets/many.lance/rows?format="+format).Body.Bytes()
		g := &gateStore{Store: f.st, gate: make(chan struct{})}
		g.okReads.Store(2)
		srv := httptest.NewServer(New(g, "", Options{}))
		resp, err := http.Get(srv.URL + "/api/v1/datasets/many.lance/rows?format=" + format)
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan []byte, 1)
		go func() {
			b := make([]byte, 1024)
			n, _ := io.ReadAtLeast(resp.Body, b, 1)
			first <- b[:n]
		}()
		var head []byte
		select {
		case head = <-first:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no bytes arrived while the store held back the rest: the answer is not streamed", format)
		}
		close(g.gate)
		rest, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil || !bytes.Equal(append(head, rest...), want) {
			t.Errorf("%s: streamed answer (%v) differs from the whole one (%d vs %d bytes)", format, err, len(head)+len(rest), len(want))
		}
	}
}
