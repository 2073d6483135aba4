package api

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVersionTTL checks Options.VersionTTL: within it a confirmed latest
// version is taken as it is (no request reaches the store, and a commit
// landing meanwhile is not seen yet); once it has passed the next request
// sees the commit; without it every request confirms the versions.
func TestVersionTTL(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	var mu sync.Mutex
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	h := New(cs, "", Options{VersionTTL: time.Second})
	defer h.Close()
	h.now = clock
	plain := New(cs, "", Options{})
	defer plain.Close()
	plain.now = clock

	versions := func(h *Handler) (string, int64) {
		t.Helper()
		before := cs.calls.Load()
		w := get(t, h, "/api/v1/versions")
		if w.Code != 200 {
			t.Fatalf("versions: %d %s", w.Code, w.Body)
		}
		return strings.TrimSpace(w.Body.String()), cs.calls.Load() - before
	}
	first, _ := versions(h)
	if _, n := versions(plain); n == 0 {
		t.Fatal("without a TTL the warm handler's first versions request made no store call")
	}
	advance(500 * time.Millisecond)
	if again, n := versions(h); again != first || n != 0 {
		t.Fatalf("within the TTL: %s after %d store calls, want %s after none", again, n, first)
	}
	if _, n := versions(plain); n == 0 {
		t.Fatal("without a TTL a repeated versions request made no store call")
	}

	trackPoint(t, f.st, f.runIDs[0], 10_000, 1.5) // a new metrics version
	latest, _ := versions(plain)
	if latest == first {
		t.Fatalf("the commit made no new version: %s", latest)
	}
	if stale, _ := versions(h); stale != first {
		t.Fatalf("within the TTL the handler answered %s, want the confirmed %s", stale, first)
	}
	advance(600 * time.Millisecond) // 1.1 s since the confirmation
	if fresh, n := versions(h); fresh != latest || n == 0 {
		t.Fatalf("after the TTL: %s after %d store calls, want %s", fresh, n, latest)
	}
}
