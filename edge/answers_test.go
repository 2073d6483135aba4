package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// versioned answers like the API: an ETag of the current version, 304 to
// a matching If-None-Match without "reading" (full counts the answers
// built), no-store for errors.
type versioned struct {
	version atomic.Int64
	full    atomic.Int64
	size    int
}

func (v *versioned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("fail") != "" {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, `{"error":{}}`)
		return
	}
	tag := fmt.Sprintf(`"v%d"`, v.version.Load())
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "public, max-age=1")
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	v.full.Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%s %s %s", r.URL.RequestURI(), tag, strings.Repeat("x", v.size))
}

func get(t *testing.T, h http.Handler, uri string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, uri, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAnswerCache(t *testing.T) {
	v := &versioned{size: 10}
	c := newAnswerCache(v, 100, 250)
	a := get(t, c, "/api/v1/series/points?ids=1")
	b := get(t, c, "/api/v1/series/points?ids=1")
	if a.Code != 200 || b.Code != 200 || a.Body.String() != b.Body.String() || a.Header().Get("ETag") != b.Header().Get("ETag") ||
		b.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("kept answer differs: %d %q %v / %d %q %v", a.Code, a.Body, a.Header(), b.Code, b.Body, b.Header())
	}
	if n := v.full.Load(); n != 1 {
		t.Fatalf("%d answers built for two equal requests, want 1", n)
	}
	v.version.Add(1) // the data changed: the next answer is the new one
	if c := get(t, c, "/api/v1/series/points?ids=1"); !strings.Contains(c.Body.String(), `"v1"`) || v.full.Load() != 2 {
		t.Fatalf("after a change: %q (%d built)", c.Body, v.full.Load())
	}
	// A client's own revalidation passes through and gets its 304.
	if c := get(t, c, "/api/v1/series/points?ids=1", "If-None-Match", `"v1"`); c.Code != 304 {
		t.Fatalf("client revalidation: %d", c.Code)
	}
	// Errors and paths outside /api/ are never kept.
	get(t, c, "/api/v1/x?fail=1")
	get(t, c, "/healthz")
	if c.get("/api/v1/x?fail=1") != nil || c.get("/healthz") != nil {
		t.Fatal("kept an error or a non-API answer")
	}
	// Bounded: answers over maxEntry are not kept, the total stays under maxTotal.
	big := &versioned{size: 200}
	cb := newAnswerCache(big, 100, 250)
	get(t, cb, "/api/v1/big")
	get(t, cb, "/api/v1/big")
	if big.full.Load() != 2 {
		t.Fatalf("an answer over the entry bound was kept")
	}
	for i := 0; i < 20; i++ {
		get(t, c, fmt.Sprintf("/api/v1/runs?i=%d", i))
		if c.total > c.maxTotal {
			t.Fatalf("total %d over the bound %d", c.total, c.maxTotal)
		}
	}
}
