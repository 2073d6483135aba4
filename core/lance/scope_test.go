package lance

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// TestScopeFindsLatestOnce checks that the reads of one scope find a
// dataset's latest version once: concurrent and later Opens, LatestVersion,
// IsLatest and Latest cost no request more, and agree.
func TestScopeFindsLatestOnce(t *testing.T) {
	for _, spec := range []bool{false, true} {
		t.Run(fmt.Sprint("speculative=", spec), func(t *testing.T) {
			mem := store.NewMemory()
			putVersions(t, mem, "t.lance", 5, NamingV2, 5)
			st := noList{mem}
			ctx := WithLatestScope(t.Context(), ScopeOptions{Speculative: spec})
			mem.ResetCounters()
			var wg sync.WaitGroup
			ds := make([]*Dataset, 4)
			errs := make([]error, 4)
			for i := range ds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ds[i], errs[i] = Open(ctx, st, "t.lance", OpenOptions{})
				}()
			}
			wg.Wait()
			ok, err := ConfirmScope(ctx)
			if err != nil || !ok {
				t.Fatalf("ConfirmScope = %v, %v", ok, err)
			}
			first := mem.Counters()
			if first.Requests() != 3 {
				t.Errorf("4 concurrent opens cost %d requests (%+v), want 3 (hint, manifest, next manifest)", first.Requests(), first)
			}
			for i, d := range ds {
				if errs[i] != nil || d.Version() != 5 {
					t.Fatalf("open %d: %v, %v", i, d, errs[i])
				}
			}
			if v, err := LatestVersion(ctx, st, "t.lance"); err != nil || v != 5 {
				t.Fatalf("LatestVersion = %d, %v", v, err)
			}
			if same, err := ds[0].IsLatest(ctx); err != nil || !same {
				t.Fatalf("IsLatest = %v, %v", same, err)
			}
			if d, err := ds[1].Latest(ctx); err != nil || d != ds[1] {
				t.Fatalf("Latest = %v, %v", d, err)
			}
			old, err := Open(ctx, st, "t.lance", OpenOptions{Version: 3})
			if err != nil {
				t.Fatal(err)
			}
			before := mem.Counters()
			if same, err := old.IsLatest(ctx); err != nil || same {
				t.Fatalf("IsLatest of version 3 = %v, %v", same, err)
			}
			if d, err := old.Latest(ctx); err != nil || d.Version() != 5 {
				t.Fatalf("Latest of version 3 = %v, %v", d, err)
			}
			if c := mem.Counters().Sub(before); c.Requests() != 0 {
				t.Errorf("asking the scope again cost %+v", c)
			}
			// Outside the scope, a commit is seen at once.
			putVersions(t, mem, "t.lance", 6, NamingV2, 6)
			if d, err := Open(t.Context(), st, "t.lance", OpenOptions{}); err != nil || d.Version() != 6 {
				t.Fatalf("Open outside the scope = %v, %v", d, err)
			}
			if d, err := Open(ctx, st, "t.lance", OpenOptions{}); err != nil || d.Version() != 5 {
				t.Fatalf("Open in the scope after a commit = %v, %v (the scope's answer is 5)", d, err)
			}
		})
	}
}

// TestScopeSpeculationFails checks that a speculative scope whose hint is
// behind takes the hinted version and reports it unconfirmed, and that a
// scope without speculation finds the newest version.
func TestScopeSpeculationFails(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 7, NamingV2, 6) // the hint lags one commit
	st := noList{mem}
	ctx := WithLatestScope(t.Context(), ScopeOptions{Speculative: true})
	d, err := Open(ctx, st, "t.lance", OpenOptions{})
	if err != nil || d.Version() != 6 {
		t.Fatalf("speculative Open = %v, %v, want the hinted version 6", d, err)
	}
	for i := 0; i < 2; i++ { // asked twice, the same answer
		if ok, err := ConfirmScope(ctx); err != nil || ok {
			t.Fatalf("ConfirmScope = %v, %v, want false: version 7 exists", ok, err)
		}
	}
	ctx = WithLatestScope(t.Context(), ScopeOptions{})
	if d, err := Open(ctx, st, "t.lance", OpenOptions{}); err != nil || d.Version() != 7 {
		t.Fatalf("Open = %v, %v, want 7", d, err)
	}
	if ok, err := ConfirmScope(ctx); err != nil || !ok {
		t.Fatalf("ConfirmScope without speculation = %v, %v", ok, err)
	}
}

// failStore fails every read of one key.
type failStore struct {
	noList
	key string
}

func (s failStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if key == s.key {
		return store.ObjectInfo{}, fmt.Errorf("stat %s: boom", key)
	}
	return s.noList.Stat(ctx, key)
}

// TestScopeConfirmationError checks that a failed confirmation is an
// error of ConfirmScope, not a confirmation.
func TestScopeConfirmationError(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 3, NamingV2, 3)
	st := failStore{noList{mem}, keys{root: "t.lance"}.manifest(4, NamingV2)}
	ctx := WithLatestScope(t.Context(), ScopeOptions{Speculative: true})
	if _, err := Open(ctx, st, "t.lance", OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ConfirmScope(ctx); err == nil || ok {
		t.Fatalf("ConfirmScope = %v, %v, want the probe's error", ok, err)
	}
}
