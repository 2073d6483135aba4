package api

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// serveCut is get for answers that may be cut half-way: it reports
// whether the handler broke the connection (http.ErrAbortHandler) after
// answering what the recorder holds.
func serveCut(h http.Handler, target string) (w *httptest.ResponseRecorder, cut bool) {
	w = httptest.NewRecorder()
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			cut = true
		}
	}()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w, false
}

// allSeries lists the fixture's series ids: three of 3,000 points
// ("loss") and three of one ("once").
func allSeries(t *testing.T, f *fixture) []tracking.SeriesID {
	t.Helper()
	var ids []tracking.SeriesID
	for k, run := range f.runIDs {
		ids = append(ids, f.series[fmt.Sprintf("%d/loss", k)])
		id, err := tracking.NewSeriesID(run, "once", map[string]any{"subset": "val"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// budgetFree checks that no request holds any of h's memory budget.
func budgetFree(t *testing.T, h *Handler, what string) {
	t.Helper()
	if !h.mem.sem.TryAcquire(h.mem.server) {
		t.Fatalf("%s: the memory budget is still held after the answer", what)
	}
	h.mem.sem.Release(h.mem.server)
}

// TestPointsDuplicateIDs: an id given many times is answered once, at its
// first place, in both forms (the 1,000-id request of one series that
// made an answer a thousand times the series).
func TestPointsDuplicateIDs(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{AnswerCache: -1})
	a, b := f.series["0/loss"], f.series["2/loss"]
	for _, format := range []string{"", "&format=f64"} {
		want := get(t, h, fmt.Sprintf("/api/v1/series/points?ids=%d,%d&max_points=0%s", a, b, format))
		if want.Code != 200 {
			t.Fatalf("%d %s", want.Code, want.Body)
		}
		ids := []string{strconv.FormatUint(uint64(a), 10), strconv.FormatUint(uint64(a), 10), strconv.FormatUint(uint64(b), 10)}
		for len(ids) < maxIDs {
			ids = append(ids, ids[len(ids)%2])
		}
		got := get(t, h, "/api/v1/series/points?ids="+strings.Join(ids, ",")+"&max_points=0"+format)
		if got.Code != 200 || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("format %q: %d ids naming 2 series: %d, %d bytes; want the %d bytes of the 2 series", format, len(ids), got.Code, got.Body.Len(), want.Body.Len())
		}
	}
}

// TestPointsBudgets is a model test of the memory budget of a request:
// for random requests (ids repeated, both forms, full and downsampled
// reads) under budgets from a few KiB to plenty, the answer is always one
// of: the exact answer of an unbounded server (whole, or streamed in parts
// when it does not fit whole), 413 TooLarge with its JSON body before
// anything was sent, or (a series that alone does not fit met after a
// streamed answer began) a strict prefix of the exact answer on a broken
// connection. Each budget that lets a series through answers, and the
// budget is whole again after every request.
func TestPointsBudgets(t *testing.T) {
	f := newFixture(t)
	all := allSeries(t, f)
	unbounded := New(f.st, "", Options{AnswerCache: -1, RequestMemory: -1, ServerMemory: -1})
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	seen := map[string]bool{}
	for _, budget := range []int64{4 << 10, 64 << 10, 256 << 10, 512 << 10, 768 << 10, 1 << 20, 2 << 20, 4 << 20, 64 << 20} {
		h := New(f.st, "", Options{AnswerCache: -1, RequestMemory: budget, ServerMemory: 4 * budget})
		for range 12 {
			var ids []string
			for range 1 + rng.IntN(10) {
				ids = append(ids, strconv.FormatUint(uint64(all[rng.IntN(len(all))]), 10))
			}
			target := "/api/v1/series/points?ids=" + strings.Join(ids, ",") + []string{"", "&max_points=0", "&max_points=100", "&max_points=0&fields=values"}[rng.IntN(4)]
			if rng.IntN(2) == 0 {
				target += "&format=f64"
			}
			want := get(t, unbounded, target)
			if want.Code != 200 {
				t.Fatalf("%s unbounded: %d %s", target, want.Code, want.Body)
			}
			got, cut := serveCut(h, target)
			what := fmt.Sprintf("budget %d: %s", budget, target)
			switch {
			case cut:
				if got.Code != 200 || got.Body.Len() >= want.Body.Len() || !bytes.HasPrefix(want.Body.Bytes(), got.Body.Bytes()) {
					t.Fatalf("%s: cut after %d bytes (%d) that are not a start of the %d-byte answer", what, got.Body.Len(), got.Code, want.Body.Len())
				}
				seen["cut"] = true
			case got.Code == 413:
				if e := errorOf(t, got); e.Error.Code != CodeTooLarge || !strings.Contains(e.Error.Message, "--request-memory") {
					t.Fatalf("%s: 413 with %+v", what, e)
				}
				seen["413"] = true
			case got.Code == 200:
				if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Fatalf("%s: %d bytes differ from the unbounded %d", what, got.Body.Len(), want.Body.Len())
				}
				if got.Header().Get("Content-Length") == "" {
					seen["streamed "+got.Header().Get("Content-Type")] = true
				} else {
					seen["whole"] = true
				}
			default:
				t.Fatalf("%s: %d %s", what, got.Code, got.Body)
			}
			if budget >= 64<<20 && (got.Code != 200 || cut) {
				t.Fatalf("%s: %d (cut %v) with a budget that holds every series", what, got.Code, cut)
			}
			budgetFree(t, h, what)
		}
	}
	for _, k := range []string{"whole", "413", "streamed application/json"} {
		if !seen[k] {
			t.Errorf("no answer was %s (saw %v)", k, seen)
		}
	}
	t.Logf("outcomes: %v", seen)
}

// TestPointsStreamedForms: an answer of several series that does not fit
// a request's memory whole is streamed in parts that fit, in both forms,
// byte for byte the answer of an unbounded server: the smallest budget
// (in steps of a tenth) that answers it streams it, and a HEAD request
// gets its headers alone.
func TestPointsStreamedForms(t *testing.T) {
	f := newFixture(t)
	ids := fmt.Sprintf("%d,%d,%d", f.series["0/loss"], f.series["1/loss"], f.series["2/loss"])
	unbounded := New(f.st, "", Options{AnswerCache: -1, RequestMemory: -1})
	for _, format := range []string{"", "&format=f64"} {
		target := "/api/v1/series/points?ids=" + ids + "&max_points=0" + format
		want := get(t, unbounded, target)
		budget := int64(64 << 10)
		for ; ; budget += budget / 10 {
			if budget > 64<<20 {
				t.Fatalf("%s: no budget up to 64 MiB answers", target)
			}
			h := New(f.st, "", Options{AnswerCache: -1, RequestMemory: budget})
			got, cut := serveCut(h, target)
			if cut || got.Code != 200 {
				if got.Code != 413 && !cut {
					t.Fatalf("%s, budget %d: %d %s", target, budget, got.Code, got.Body)
				}
				continue
			}
			if got.Header().Get("Content-Length") != "" || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Errorf("format %q, budget %d: Content-Length %q, %d bytes; want the streamed %d bytes", format, budget,
					got.Header().Get("Content-Length"), got.Body.Len(), want.Body.Len())
			}
			budgetFree(t, h, target)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodHead, target, nil))
			if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("HEAD %s: %d, %d bytes, %q", target, w.Code, w.Body.Len(), w.Header().Get("Content-Type"))
			}
			budgetFree(t, h, "HEAD "+target)
			t.Logf("format %q: streamed under %d bytes (the answer: %d)", format, budget, want.Body.Len())
			break
		}
	}
}

// TestServerBudgetBusy: a request that finds the server's budget taken
// waits for room and, finding none, is refused with 503 Busy, Retry-After
// and the JSON error body; once the memory is given back it is answered,
// also when that happens while it waits.
func TestServerBudgetBusy(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{AnswerCache: -1, RequestMemory: 8 << 20, ServerMemory: 8 << 20})
	h.mem.wait = 100 * time.Millisecond
	target := fmt.Sprintf("/api/v1/series/points?ids=%d", f.series["0/loss"])
	ctx := context.Background()
	hog := h.mem.reserve(ctx)
	if err := hog.grow(8 << 20); err != nil {
		t.Fatal(err)
	}
	data, err := f.st.List(ctx, store.ListOptions{Prefix: "t.lance/data/"})
	if err != nil || len(data) == 0 {
		t.Fatal(data, err)
	}
	h.opts.Files = true
	for _, tg := range []string{target, target + "&format=f64", "/files/" + data[0].Key,
		fmt.Sprintf("/api/v1/series?runs=%s,%s", f.runIDs[0], f.runIDs[0])} {
		w := get(t, h, tg)
		if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("%s with the budget taken: %d (Retry-After %q) %s", tg, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if e := errorOf(t, w); e.Error.Code != CodeBusy || !strings.Contains(e.Error.Message, "--server-memory") {
			t.Errorf("%s: %+v", tg, e)
		}
	}
	// Given back while a request waits (a long wait now): it is answered.
	h.mem.wait = time.Minute
	var wg sync.WaitGroup
	var w *httptest.ResponseRecorder
	wg.Add(1)
	go func() {
		defer wg.Done()
		w = get(t, h, target)
	}()
	hog.release()
	wg.Wait()
	if w.Code != 200 {
		t.Fatalf("after the budget was given back: %d %s", w.Code, w.Body)
	}
	budgetFree(t, h, target)
}

// TestSeriesOfRunsRepeated: a run named many times in /api/v1/series is
// read once and answered at each place; an answer larger than the
// request's memory whole is sent from the parts encoded once, byte for
// byte the same answer, length and ETag as an unbounded server's.
func TestSeriesOfRunsRepeated(t *testing.T) {
	f := newFixture(t)
	var args []string
	for i := range maxRuns {
		args = append(args, []string{f.runIDs[0], f.runIDs[1], "nope"}[i%3])
	}
	target := "/api/v1/series?runs=" + strings.Join(args, ",")
	want := get(t, New(f.st, "", Options{RequestMemory: -1}), target)
	if want.Code != 200 || want.Body.Len() < 512<<10 {
		t.Fatalf("%d, %d bytes", want.Code, want.Body.Len())
	}
	h := New(f.st, "", Options{RequestMemory: 256 << 10})
	got := get(t, h, target)
	if got.Code != 200 || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || got.Header().Get("ETag") != want.Header().Get("ETag") ||
		got.Header().Get("Content-Length") != strconv.Itoa(want.Body.Len()) {
		t.Fatalf("under a 256 KiB budget: %d, %d bytes, ETag %s (want %s)", got.Code, got.Body.Len(), got.Header().Get("ETag"), want.Header().Get("ETag"))
	}
	if w := get(t, h, target, "If-None-Match", want.Header().Get("ETag")); w.Code != 304 {
		t.Errorf("revalidation: %d", w.Code)
	}
	budgetFree(t, h, target)
}

// TestRunsFiltersBounded: more than maxFilters tag or param filters in
// one request is a 400 naming the parameter.
func TestRunsFiltersBounded(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	for _, k := range []string{"tag", "param"} {
		v := "t"
		if k == "param" {
			v = "model%3Dm1"
		}
		q := strings.Repeat(k+"="+v+"&", maxFilters)
		if w := get(t, h, "/api/v1/runs?"+strings.TrimSuffix(q, "&")); w.Code != 200 {
			t.Errorf("%d %s filters: %d %s", maxFilters, k, w.Code, w.Body)
		}
		w := get(t, h, "/api/v1/runs?"+q+k+"="+v)
		if e := errorOf(t, w); w.Code != 400 || !strings.HasPrefix(e.Error.Message, k+":") {
			t.Errorf("%d %s filters: %d %+v", maxFilters+1, k, w.Code, e)
		}
	}
}
