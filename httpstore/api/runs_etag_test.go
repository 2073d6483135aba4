package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// TestRunsETagFollowsTheClock checks that the runs routes' ETags cover the
// status they report: a running run whose writer stopped heartbeating reads
// as crashed later at the same table versions, and a client revalidating
// its copy must get the new answer, not a 304 that keeps "running".
func TestRunsETagFollowsTheClock(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	var mu sync.Mutex
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1, Now: clock,
		CrashedAfter: time.Minute, HeartbeatInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run, err := w.StartRun(ctx, tracking.RunSpec{ID: "r1", Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Track(1, "loss"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The writer goes away without finishing the run (no more heartbeats).

	h := New(st, "", Options{})
	defer h.Close()
	h.repoOpts = tracking.RepoOptions{Now: clock, CrashedAfter: time.Minute}
	get := func(path, etag string) (int, string, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Header().Get("ETag"), rec.Body.String()
	}
	for _, path := range []string{"/api/v1/runs", "/api/v1/runs/r1"} {
		mu.Lock()
		now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		mu.Unlock()
		code, etag, body := get(path, "")
		if code != http.StatusOK || etag == "" || !strings.Contains(body, `"running"`) {
			t.Fatalf("%s: %d %q %s, want 200 with an ETag and a running run", path, code, etag, body)
		}
		if code, _, _ := get(path, etag); code != http.StatusNotModified {
			t.Fatalf("%s: revalidating at once: %d, want 304", path, code)
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		code, etag2, body := get(path, etag)
		if code != http.StatusOK || !strings.Contains(body, `"crashed"`) {
			t.Fatalf("%s: revalidating after the heartbeat aged: %d %s, want 200 with a crashed run", path, code, body)
		}
		if etag2 == etag {
			t.Fatalf("%s: the crashed answer has the running answer's ETag %s", path, etag)
		}
	}
}
