package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// seriesOfRuns decodes an answer of /api/v1/series.
func seriesOfRuns(t *testing.T, h http.Handler, runs string) []map[string]any {
	t.Helper()
	w := get(t, h, "/api/v1/series?runs="+url.QueryEscape(runs))
	if w.Code != http.StatusOK {
		t.Fatalf("runs=%s: %d %s", runs, w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var out []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("runs=%s: %v: %s", runs, err, w.Body)
	}
	return out
}

// TestSeriesOfRuns checks that /api/v1/series?runs= answers, for each run
// asked and in the order asked, what /api/v1/runs/{id}/series answers for
// it, and a run that does not exist as that route's error.
func TestSeriesOfRuns(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	// The runs (one archived), a repeat, and a name only one run has.
	args := []string{f.runIDs[2], f.runIDs[0], f.runIDs[1], f.runIDs[0], "run-1"}
	got := seriesOfRuns(t, h, strings.Join(args, ","))
	if len(got) != len(args) {
		t.Fatalf("%d elements for %d runs", len(got), len(args))
	}
	for i, a := range args {
		w := get(t, h, "/api/v1/runs/"+url.PathEscape(a)+"/series")
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", a, w.Code, w.Body)
		}
		var want []any
		if err := json.Unmarshal(w.Body.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("run %s has no series in the fixture", a)
		}
		if got[i]["run"] != a {
			t.Errorf("element %d: run %v, want %q", i, got[i]["run"], a)
		}
		if _, ok := got[i]["error"]; ok {
			t.Errorf("element %d (%s): error %v", i, a, got[i]["error"])
		}
		if !reflect.DeepEqual(got[i]["series"], want) {
			t.Errorf("element %d (%s): series\n%v\nwant\n%v", i, a, got[i]["series"], want)
		}
	}
	// A run that does not exist: its element holds the per-run route's
	// error, and the other runs are answered.
	got = seriesOfRuns(t, h, f.runIDs[0]+",nope")
	if len(got) != 2 || got[0]["series"] == nil || got[1]["run"] != "nope" {
		t.Fatalf("with an unknown run: %v", got)
	}
	if s, ok := got[1]["series"]; !ok || s != nil {
		t.Errorf("unknown run: series %v, want null", s)
	}
	w := get(t, h, "/api/v1/runs/nope/series")
	e := errorOf(t, w)
	want := map[string]any{"code": e.Error.Code, "message": e.Error.Message}
	if e.Error.Code != CodeNotFound || !reflect.DeepEqual(got[1]["error"], want) {
		t.Errorf("unknown run: error %v, want %v", got[1]["error"], want)
	}
	// Caching: tagged by the content, revalidated to a 304.
	target := "/api/v1/series?runs=" + f.runIDs[0]
	w = get(t, h, target)
	tag := w.Header().Get("ETag")
	if !strings.HasPrefix(tag, `W/"`) {
		t.Fatalf("ETag %q", tag)
	}
	if w := get(t, h, target, "If-None-Match", tag); w.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d", w.Code)
	}
	if w := get(t, h, "/api/v1/series?runs="+f.runIDs[1], "If-None-Match", tag); w.Code != http.StatusOK {
		t.Errorf("another run's answer with the first's tag: %d", w.Code)
	}
}

// TestSeriesOfNewestRuns checks newest=N: the lists of the N most recently
// created runs, newest first, as runs= of their ids answers them.
func TestSeriesOfNewestRuns(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	w := get(t, h, "/api/v1/runs")
	var runs []struct {
		ID        string `json:"run_id"`
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &runs); err != nil || len(runs) != 3 {
		t.Fatalf("runs: %v %s", err, w.Body)
	}
	// The fixture's runs are listed oldest first.
	newestFirst := []string{runs[2].ID, runs[1].ID, runs[0].ID}
	for _, n := range []int{1, 2, 3, 1000} {
		want := newestFirst[:min(n, 3)]
		got := seriesOfNewest(t, h, n)
		exp := seriesOfRuns(t, h, strings.Join(want, ","))
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("newest=%d:\n%v\nwant\n%v", n, got, exp)
		}
	}
}

func seriesOfNewest(t *testing.T, h http.Handler, n int) []map[string]any {
	t.Helper()
	w := get(t, h, fmt.Sprintf("/api/v1/series?newest=%d", n))
	if w.Code != http.StatusOK {
		t.Fatalf("newest=%d: %d %s", n, w.Code, w.Body)
	}
	var out []map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSeriesOfRunsErrors(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	run := f.runIDs[0]
	for _, c := range []struct{ target, arg string }{
		{"/api/v1/series", "runs"},
		{"/api/v1/series?runs=", "runs"},
		{"/api/v1/series?runs=" + run + ",," + run, "runs"},
		{"/api/v1/series?runs=" + run + ",", "runs"},
		{"/api/v1/series?runs=a%00b", "runs"},
		{"/api/v1/series?runs=" + strings.Repeat(run+",", 1000) + run, "runs"},
		{"/api/v1/series?runs=" + run + "&runs=" + run, "runs"},
		{"/api/v1/series?runs=" + run + "&ids=1", "ids"},
		{"/api/v1/series?run=" + run, "run"},
		{"/api/v1/series?newest=0", "newest"},
		{"/api/v1/series?newest=x", "newest"},
		{"/api/v1/series?newest=1001", "newest"},
		{"/api/v1/series?newest=", "newest"},
		{"/api/v1/series?newest=1&newest=2", "newest"},
		{"/api/v1/series?newest=1&runs=" + run, "newest"},
	} {
		w := get(t, h, c.target)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%.80s: %d %.200s, want 400", c.target, w.Code, w.Body)
			continue
		}
		if e := errorOf(t, w); e.Error.Code != CodeInvalid || !strings.HasPrefix(e.Error.Message, c.arg+":") {
			t.Errorf("%.80s: error %+v does not name %q", c.target, e.Error, c.arg)
		}
	}
	// 1,000 runs are allowed.
	if got := seriesOfRuns(t, h, strings.TrimSuffix(strings.Repeat(run+",", 1000), ",")); len(got) != 1000 {
		t.Errorf("1000 runs: %d elements", len(got))
	}
	// A root without a repository.
	if w := get(t, New(f.st, "nested", Options{}), "/api/v1/series?runs="+run); w.Code != http.StatusNotFound || errorOf(t, w).Error.Code != CodeNotFound {
		t.Errorf("no repository: %d %s", w.Code, w.Body)
	}
	// A store failing while the lists are read fails the whole answer,
	// with the error body, not elements that look complete.
	fst := &faultStore{Store: f.st, err: errInjected}
	fst.armed.Store(true)
	if w := get(t, New(fst, "", Options{}), "/api/v1/series?runs="+run); w.Code != http.StatusBadGateway || errorOf(t, w).Error.Code != CodeStoreFailed {
		t.Errorf("store failure: %d %s", w.Code, w.Body)
	}
}

// TestPointsFields checks fields=: the arrays named, and only them, each
// as the default answer holds it; all of them is the default answer byte
// for byte.
func TestPointsFields(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	ids := fmt.Sprintf("%d,%d", f.series["0/loss"], f.series["2/loss"])
	for _, mp := range []string{"100", "0", "1"} {
		base := "/api/v1/series/points?ids=" + ids + "&max_points=" + mp
		full := get(t, h, base)
		if full.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", base, full.Code, full.Body)
		}
		var want []map[string]json.RawMessage
		if err := json.Unmarshal(full.Body.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		if _, ok := want[0]["mins"]; ok != (mp == "100") {
			t.Fatalf("max_points=%s: bands %v", mp, ok)
		}
		if w := get(t, h, base+"&fields=maxs,epochs,values,steps,mins,timestamps"); w.Body.String() != full.Body.String() {
			t.Errorf("max_points=%s: every field differs from the default answer", mp)
		}
		for _, fl := range []string{"steps,values,mins,maxs", "steps,values", "values", "timestamps,epochs", "maxs", "mins"} {
			w := get(t, h, base+"&fields="+fl)
			if w.Code != http.StatusOK {
				t.Fatalf("fields=%s: %d %s", fl, w.Code, w.Body)
			}
			var got []map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("fields=%s: %v: %.300s", fl, err, w.Body)
			}
			if len(got) != len(want) {
				t.Fatalf("fields=%s: %d series", fl, len(got))
			}
			asked := map[string]bool{"series_id": true}
			for _, n := range strings.Split(fl, ",") {
				asked[n] = true
			}
			for i := range want {
				exp := map[string]string{}
				for k, v := range want[i] {
					if asked[k] {
						exp[k] = string(v)
					}
				}
				have := map[string]string{}
				for k, v := range got[i] {
					have[k] = string(v)
				}
				if !reflect.DeepEqual(have, exp) {
					t.Errorf("max_points=%s fields=%s: series %d has keys %v, want %v (or different arrays)", mp, fl, i, keys(have), keys(exp))
				}
			}
			if len(w.Body.Bytes()) >= len(full.Body.Bytes()) {
				t.Errorf("fields=%s: %d bytes, the default %d", fl, w.Body.Len(), full.Body.Len())
			}
		}
	}
	for _, c := range []string{"fields=", "fields=step", "fields=steps,,values", "fields=steps&fields=values", "fields=series_id"} {
		w := get(t, h, "/api/v1/series/points?ids="+ids+"&"+c)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", c, w.Code)
			continue
		}
		if e := errorOf(t, w); e.Error.Code != CodeInvalid || !strings.HasPrefix(e.Error.Message, "fields:") {
			t.Errorf("%s: %+v", c, e.Error)
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
