package lance

import (
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
)

var (
	testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timeStep  = time.Second
)

// TestOpenLatestCost pins the request budget of opening the latest of 1,000
// versions (issue 2, "I/O cost").
func TestOpenLatestCost(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name   string
		naming Naming
		hint   uint64
		noList bool
		max    int64
		lists  int64
	}{
		{"listing V2", NamingV2, n, false, 2, 1},
		{"listing V2 no hint", NamingV2, 0, false, 2, 1},
		{"listing V1", NamingV1, n, false, 3, 2}, // limit-1 listing sees "1.manifest", then a full listing
		{"hint current", NamingV2, n, true, 3, 0},
		{"hint stale by 2", NamingV2, n - 2, true, 5, 0},
		{"hint current V1", NamingV1, n, true, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			putVersions(t, mem, "t.lance", n, tc.naming, tc.hint)
			var st store.Store = mem
			if tc.noList {
				st = noList{mem}
			}
			mem.ResetCounters()
			d, err := Open(t.Context(), st, "t.lance", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := mem.Counters()
			t.Logf("%s: %d requests (%d reads, %d lists, %d stats)", tc.name, c.Requests(), c.Reads, c.Lists, c.Stats)
			if d.Version() != n {
				t.Fatalf("opened version %d, want %d", d.Version(), n)
			}
			if c.Requests() > tc.max || (!tc.noList && c.Lists != tc.lists) {
				t.Fatalf("%d requests (%+v), budget %d", c.Requests(), c, tc.max)
			}
			if rows, _ := d.CountRows(t.Context()); rows != 40 {
				t.Fatalf("CountRows = %d", rows)
			}
			if c2 := mem.Counters(); c2 != c {
				t.Fatalf("CountRows did I/O: %+v", c2.Sub(c))
			}
		})
	}
}

func TestOpenLatestNoHintNoListing(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 37, NamingV2, 0)
	mem.ResetCounters()
	d, err := Open(t.Context(), noList{mem}, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != 37 {
		t.Fatalf("got %d", d.Version())
	}
	// hint (missing), 1, 2, 4, ..., 64 (missing), then bisection of (32, 64).
	if c := mem.Counters().Requests(); c > 14 {
		t.Fatalf("gallop: %d requests", c)
	}
}

func TestOpenVersionCost(t *testing.T) {
	for _, tc := range []struct {
		naming Naming
		max    int64
	}{{NamingV2, 1}, {NamingV1, 2}} {
		t.Run(tc.naming.String(), func(t *testing.T) {
			mem := store.NewMemory()
			putVersions(t, mem, "t.lance", 1000, tc.naming, 1000)
			mem.ResetCounters()
			d, err := Open(t.Context(), mem, "t.lance", OpenOptions{Version: 500})
			if err != nil {
				t.Fatal(err)
			}
			if d.Version() != 500 {
				t.Fatalf("got %d", d.Version())
			}
			if c := mem.Counters(); c.Requests() > tc.max {
				t.Fatalf("%d requests, budget %d", c.Requests(), tc.max)
			}
		})
	}
}

// Without store.TailReader a manifest of unknown size costs a Stat more.
func TestOpenWithoutTailReader(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 20, NamingV2, 20)
	mem.ResetCounters()
	d, err := Open(t.Context(), plainStore{mem}, "t.lance", OpenOptions{})
	if err != nil || d.Version() != 20 {
		t.Fatal(d, err)
	}
	if c := mem.Counters(); c.Requests() != 2 {
		t.Fatalf("latest by listing: %d requests", c.Requests())
	}
	mem.ResetCounters()
	if _, err := Open(t.Context(), plainStore{mem}, "t.lance", OpenOptions{Version: 7}); err != nil {
		t.Fatal(err)
	}
	if c := mem.Counters(); c.Requests() != 2 || c.Stats != 1 {
		t.Fatalf("version 7: %+v", c)
	}
}
