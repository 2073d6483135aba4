package lance

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// listFailStore fails every full List (no limit) while fail is set.
type listFailStore struct {
	*timedStore
	fail atomic.Bool
}

func (s *listFailStore) List(ctx context.Context, o store.ListOptions) ([]store.ObjectInfo, error) {
	if s.fail.Load() && o.Limit == 0 { // cleanup's listings, not a commit's limit-1 look at the newest version
		return nil, errInjected
	}
	return s.timedStore.List(ctx, o)
}

func versionNumbers(t *testing.T, st store.Store, root string) []uint64 {
	t.Helper()
	refs, err := ListVersions(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, r := range refs {
		out = append(out, r.Version)
	}
	return out
}

func TestAutoCleanup(t *testing.T) {
	ctx := context.Background()
	st := &listFailStore{timedStore: newTimedStore()}
	var offset atomic.Int64 // the test clock runs this far ahead of real time
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	st.timedStore.now = clock
	type run struct {
		version uint64
		stats   CleanupStats
		err     error
	}
	var runs []run
	opts := WriteOptions{Commit: CommitOptions{now: clock, OnAutoCleanup: func(v uint64, s CleanupStats, err error) {
		runs = append(runs, run{v, s, err})
	}}}
	next := int64(0)
	appendRows := func(d *Dataset, o WriteOptions) *Dataset {
		t.Helper()
		rec := idBatch(next, next+10)
		defer rec.Release()
		next += 10
		nd, err := d.Append(ctx, Batches(rec), o)
		if err != nil {
			t.Fatal(err)
		}
		return nd
	}
	d := mustCreate(t, st, "t", 0, 10, WriteOptions{})
	next = 10
	if err := d.CreateTag(ctx, "keep", 1); err != nil {
		t.Fatal(err)
	}
	d, err := d.UpdateConfig(ctx, map[string]string{ConfigAutoCleanupInterval: "4", ConfigAutoCleanupOlderThan: "1h",
		ConfigAutoCleanupRetainVersions: "2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A file of a commit in flight: unreferenced, and young next to 7 days.
	inflight := "t/data/inflight.lance"
	if err := st.Put(ctx, inflight, []byte("x")); err != nil {
		t.Fatal(err)
	}
	d = appendRows(d, opts) // 3
	d = appendRows(d, opts) // 4: runs, but every version is younger than 1h
	if len(runs) != 1 || runs[0].version != 4 || runs[0].err != nil || runs[0].stats.VersionsRemoved != 0 {
		t.Fatalf("runs after version 4: %+v", runs)
	}
	offset.Store(int64(2 * time.Hour))
	for v := 5; v <= 8; v++ {
		d = appendRows(d, opts)
	}
	// At 8: versions 1-4 are 2h old; 1 is tagged, 7 and 8 are the newest 2
	// and 5-8 are young anyway.
	if len(runs) != 2 || runs[1].version != 8 || runs[1].err != nil {
		t.Fatalf("runs after version 8: %+v", runs)
	}
	if s := runs[1].stats; s.VersionsRemoved != 3 || s.TransactionFilesRemoved != 3 || s.DataFilesRemoved != 0 {
		t.Fatalf("stats at 8: %+v", s)
	}
	if got := versionNumbers(t, st, "t"); !slices.Equal(got, []uint64{1, 5, 6, 7, 8}) {
		t.Fatalf("versions after auto cleanup: %v", got)
	}
	if _, err := st.Stat(ctx, inflight); err != nil {
		t.Fatalf("auto cleanup removed a young unreferenced file: %v", err)
	}
	if got := ids(t, d); !slices.Equal(got, seq(0, next)) {
		t.Fatalf("rows after auto cleanup: %v", got)
	}
	if tagged, err := Open(ctx, st, "t", OpenOptions{Tag: "keep"}); err != nil || !slices.Equal(ids(t, tagged), seq(0, 10)) {
		t.Fatalf("tagged version after auto cleanup: %v", err)
	}
	// A failing cleanup does not fail the commit; the callback hears of it.
	st.fail.Store(true)
	for v := 9; v <= 12; v++ {
		d = appendRows(d, opts)
	}
	st.fail.Store(false)
	if d.Version() != 12 || len(runs) != 3 || runs[2].version != 12 || !errors.Is(runs[2].err, errInjected) {
		t.Fatalf("runs after a failing cleanup at 12: version %d, %+v", d.Version(), runs)
	}
	// SkipAutoCleanup.
	skip := opts
	skip.Commit.SkipAutoCleanup = true
	for v := 13; v <= 16; v++ {
		d = appendRows(d, skip)
	}
	if len(runs) != 3 {
		t.Fatalf("ran although skipped: %+v", runs)
	}
	// Without older_than every unprotected version goes; a config lance
	// wrote that does not parse is reported on every commit.
	if d, err = d.UpdateConfig(ctx, nil, []string{ConfigAutoCleanupOlderThan, ConfigAutoCleanupRetainVersions}); err != nil { // 17
		t.Fatal(err)
	}
	offset.Store(0)
	for v := 18; v <= 20; v++ {
		d = appendRows(d, opts)
	}
	if len(runs) != 4 || runs[3].version != 20 || runs[3].err != nil {
		t.Fatalf("runs at 20: %+v", runs)
	}
	if got := versionNumbers(t, st, "t"); !slices.Equal(got, []uint64{1, 20}) {
		t.Fatalf("versions after a cleanup without older_than: %v", got)
	}
	txn := newTransaction(d.Version())
	bad := "soon"
	txn.Operation = &tablepb.Transaction_UpdateConfig_{UpdateConfig: &tablepb.Transaction_UpdateConfig{
		ConfigUpdates: &tablepb.Transaction_UpdateMap{UpdateEntries: []*tablepb.Transaction_UpdateMapEntry{
			{Key: ConfigAutoCleanupOlderThan, Value: &bad}}}}}
	if d, err = commit(ctx, commitReq{st: st, k: d.k, naming: d.Naming(), base: d, txn: txn, opts: opts.Commit}); err != nil { // 21
		t.Fatal(err)
	}
	for v := 22; v <= 24; v++ {
		d = appendRows(d, opts)
	}
	if len(runs) != 5 || runs[4].version != 24 || runs[4].err == nil {
		t.Fatalf("runs with a bad older_than: %+v", runs)
	}
	if got := ids(t, d); !slices.Equal(got, seq(0, next)) {
		t.Fatalf("rows at the end: %v", got)
	}
}
