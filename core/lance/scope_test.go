package lance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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

// gateStore holds every Stat until its gate opens.
type gateStore struct {
	noList
	gate chan struct{}
}

func (s gateStore) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return store.ObjectInfo{}, ctx.Err()
	}
	return s.noList.Stat(ctx, key)
}

// TestScopeAssumesHeldVersion checks IsLatest in a speculative scope: for a
// version a reader already holds it answers yes before any probe returns,
// the scope's later reads take that version, and ConfirmScope reports the
// probes' outcome: confirmed while nothing newer exists, refuted once a
// commit landed. A scope that does not speculate waits for the probes.
func TestScopeAssumesHeldVersion(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 4, NamingV2, 4)
	d, err := Open(t.Context(), noList{mem}, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gs := gateStore{noList{mem}, make(chan struct{})}
	held, err := Open(t.Context(), noList{mem}, "t.lance", OpenOptions{Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	held.st = gs // its probes wait at the gate
	// Bounded, so that an IsLatest waiting for its probes fails the test
	// instead of hanging it.
	bounded, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ctx := WithLatestScope(bounded, ScopeOptions{Speculative: true})
	if same, err := held.IsLatest(ctx); err != nil || !same {
		t.Fatalf("speculative IsLatest = %v, %v, want true at once", same, err)
	}
	if v, err := LatestVersion(ctx, gs, "t.lance"); err != nil || v != 4 {
		t.Fatalf("LatestVersion in the scope = %d, %v, want the assumed 4", v, err)
	}
	close(gs.gate)
	if ok, err := ConfirmScope(ctx); err != nil || !ok {
		t.Fatalf("ConfirmScope = %v, %v, want confirmed", ok, err)
	}

	putVersions(t, mem, "t.lance", 5, NamingV2, 5)
	ctx = WithLatestScope(t.Context(), ScopeOptions{Speculative: true})
	if same, err := d.IsLatest(ctx); err != nil || !same {
		t.Fatalf("speculative IsLatest after a commit = %v, %v, want true (checked later)", same, err)
	}
	if ok, err := ConfirmScope(ctx); err != nil || ok {
		t.Fatalf("ConfirmScope after a commit = %v, %v, want refuted", ok, err)
	}
	if same, err := d.IsLatest(WithLatestScope(t.Context(), ScopeOptions{})); err != nil || same {
		t.Fatalf("IsLatest without speculation = %v, %v, want false", same, err)
	}
}

// TestSpeculate checks lance.Speculate: a read on a held version that is
// still the latest runs once; one that a commit made stale runs again
// without speculation and that run's answer stands, errors included.
func TestSpeculate(t *testing.T) {
	mem := store.NewMemory()
	st := noList{mem}
	putVersions(t, mem, "t.lance", 2, NamingV2, 2)
	held, err := Open(t.Context(), st, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// read answers the version it takes for the latest: the held one when
	// IsLatest says so, else the newest.
	read := func(runs *[]uint64, failStale bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			d := held
			same, err := held.IsLatest(ctx)
			if err != nil {
				return err
			}
			if !same {
				if d, err = held.Latest(ctx); err != nil {
					return err
				}
			}
			*runs = append(*runs, d.Version())
			if failStale && d.Version() == held.Version() {
				return fmt.Errorf("series 7 of version %d: %w", d.Version(), ErrNotFound)
			}
			return nil
		}
	}
	var runs []uint64
	if err := Speculate(t.Context(), read(&runs, false)); err != nil || fmt.Sprint(runs) != "[2]" {
		t.Fatalf("Speculate on the latest = %v, runs %v, want one run at version 2", err, runs)
	}
	putVersions(t, mem, "t.lance", 3, NamingV2, 3)
	runs = nil
	if err := Speculate(t.Context(), read(&runs, false)); err != nil || fmt.Sprint(runs) != "[2 3]" {
		t.Fatalf("Speculate after a commit = %v, runs %v, want version 2 then 3", err, runs)
	}
	// An error built on the stale version is no answer: the second run's is.
	held, _ = Open(t.Context(), st, "t.lance", OpenOptions{Version: 2})
	runs = nil
	if err := Speculate(t.Context(), read(&runs, true)); err != nil || fmt.Sprint(runs) != "[2 3]" {
		t.Fatalf("Speculate with an error on the stale version = %v, runs %v", err, runs)
	}
}
