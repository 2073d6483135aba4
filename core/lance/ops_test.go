package lance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// timedStore is a memory store that records when each object was written,
// so cleanup can age leftovers.
type timedStore struct {
	*store.Memory
	mu    sync.Mutex
	times map[string]time.Time
	now   func() time.Time
}

func newTimedStore() *timedStore {
	return &timedStore{Memory: store.NewMemory(), times: map[string]time.Time{}, now: time.Now}
}

func (s *timedStore) touch(key string) {
	s.mu.Lock()
	s.times[key] = s.now()
	s.mu.Unlock()
}

func (s *timedStore) Put(ctx context.Context, key string, data []byte) error {
	err := s.Memory.Put(ctx, key, data)
	if err == nil {
		s.touch(key)
	}
	return err
}

func (s *timedStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.Memory.PutIfAbsent(ctx, key, data)
	if err == nil {
		s.touch(key)
	}
	return err
}

func (s *timedStore) ModTime(ctx context.Context, key string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.times[key]
	if !ok {
		return time.Time{}, store.ErrNotFound
	}
	return t, nil
}

func keysUnder(t testing.TB, st store.Store, prefix string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), store.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func TestDeleteByFilter(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 30000, WriteOptions{MaxRowsPerFile: 10000})
	// Small delete: an .arrow file in fragment 0.
	d2, stats, err := d.Delete(ctx, "id < 10 OR id = 15")
	if err != nil {
		t.Fatal(err)
	}
	if stats.RowsDeleted != 11 || stats.FragmentsUpdated != 1 || d2.Version() != 2 {
		t.Fatalf("stats %+v version %d", stats, d2.Version())
	}
	txn := txnOf(t, d2)
	if txn.GetDelete().GetPredicate() != "id < 10 OR id = 15" {
		t.Fatalf("predicate %q", txn.GetDelete().GetPredicate())
	}
	f0 := d2.Fragments()[0]
	if !strings.HasSuffix(f0.DeletionFile, ".arrow") || f0.DeletedRows != 11 || d2.mf.m.ReaderFeatureFlags != 1 || d2.mf.m.WriterFeatureFlags != 1 {
		t.Fatalf("fragment %+v flags %d", f0, d2.mf.m.ReaderFeatureFlags)
	}
	want := slices.DeleteFunc(seq(0, 30000), func(i int64) bool { return i < 10 || i == 15 })
	if got := ids(t, d2); !slices.Equal(got, want) {
		t.Fatalf("after small delete: %d rows", len(got))
	}
	// Large delete, merging with the existing deletions: a .bin file.
	d3, stats, err := d2.Delete(ctx, "id < 8000")
	if err != nil {
		t.Fatal(err)
	}
	if stats.RowsDeleted != 8000-11 || !strings.HasSuffix(d3.Fragments()[0].DeletionFile, ".bin") || d3.Fragments()[0].DeletedRows != 8000 {
		t.Fatalf("large delete: %+v %+v", stats, d3.Fragments()[0])
	}
	// A whole fragment: dropped.
	d4, stats, err := d3.Delete(ctx, "id >= 10000 AND id < 20000")
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsRemoved != 1 || len(d4.Fragments()) != 2 || d4.Fragments()[1].ID != 2 {
		t.Fatalf("drop: %+v %+v", stats, d4.Fragments())
	}
	if got := ids(t, d4); !slices.Equal(got, append(seq(8000, 10000), seq(20000, 30000)...)) {
		t.Fatalf("after drop: %d rows", len(got))
	}
	n, _ := d4.CountRows(ctx)
	if n != 12000 {
		t.Fatalf("count %d", n)
	}
	// Nothing matches: no commit. Nulls never match.
	d5, stats, err := d4.Delete(ctx, "label = 'nope'")
	if err != nil || d5.Version() != d4.Version() || stats.RowsDeleted != 0 {
		t.Fatalf("no-op delete: %v %d", err, d5.Version())
	}
	d6, stats, err := d4.Delete(ctx, "label IS NULL")
	if err != nil || stats.RowsDeleted != uint64(len(slices.DeleteFunc(ids(t, d4), func(i int64) bool { return i%7 != 0 }))) {
		t.Fatalf("null delete: %v %+v", err, stats)
	}
	// Old versions still read the same.
	old, _ := Open(ctx, st, "t", OpenOptions{Version: 2})
	if got := ids(t, old); !slices.Equal(got, want) {
		t.Fatal("version 2 changed")
	}
	_ = d6
	if _, _, err := d.Delete(ctx, "nosuch = 1"); err == nil {
		t.Fatal("unknown column accepted")
	}
}

func TestDeleteRows(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 100, WriteOptions{MaxRowsPerFile: 50})
	d2, stats, err := d.DeleteRows(ctx, []uint64{0, 1, 1<<32 | 49, 1<<32 | 49})
	if err != nil || stats.RowsDeleted != 3 {
		t.Fatal(err, stats)
	}
	if got := ids(t, d2); !slices.Equal(got, slices.DeleteFunc(seq(0, 100), func(i int64) bool { return i < 2 || i == 99 })) {
		t.Fatalf("ids %v", got)
	}
	var ae *RowAddressError
	if _, _, err := d2.DeleteRows(ctx, []uint64{5 << 32}); !errors.As(err, &ae) {
		t.Fatalf("bad address: %v", err)
	}
	if _, _, err := d2.DeleteRows(ctx, []uint64{50}); !errors.As(err, &ae) {
		t.Fatalf("bad offset: %v", err)
	}
}

func TestCompact(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 10, WriteOptions{})
	for i := int64(1); i < 10; i++ {
		d = mustAppend(t, d, i*10, i*10+10)
	}
	d, _, err := d.Delete(ctx, "id = 3 OR id = 55")
	if err != nil {
		t.Fatal(err)
	}
	before := ids(t, d)
	nd, stats, err := d.Compact(ctx, CompactOptions{TargetRowsPerFragment: 45})
	if err != nil {
		t.Fatal(err)
	}
	if nd.Version() != d.Version()+2 {
		t.Fatalf("version %d after %d", nd.Version(), d.Version())
	}
	if got := ids(t, nd); !slices.Equal(got, before) {
		t.Fatalf("rows changed: %v", got)
	}
	for _, f := range nd.Fragments() {
		if f.DeletionFile != "" || f.PhysicalRows > 45 {
			t.Fatalf("fragment %+v", f)
		}
	}
	if stats.FragmentsRemoved != 10 || stats.RowsRewritten != 98 {
		t.Fatalf("stats %+v", stats)
	}
	res, err := Open(ctx, st, "t", OpenOptions{Version: d.Version() + 1})
	if err != nil || operationName(txnOf(t, res)) != "ReserveFragments" || res.mf.m.GetMaxFragmentId() != 9+uint32(stats.FragmentsAdded) {
		t.Fatalf("reserve: %v %v", err, res.mf.m.GetMaxFragmentId())
	}
	rw := txnOf(t, nd).GetRewrite()
	if rw == nil || len(rw.GetGroups()) == 0 {
		t.Fatal("no rewrite groups")
	}
	for _, f := range nd.Fragments() {
		if f.ID <= 9 {
			t.Fatalf("new fragment reuses id %d", f.ID)
		}
	}
	if nd.mf.m.ReaderFeatureFlags != 0 {
		t.Fatal("flags not recomputed")
	}
	// Nothing left to do.
	again, _, err := nd.Compact(ctx, CompactOptions{TargetRowsPerFragment: 45})
	if err != nil || again.Version() != nd.Version() {
		t.Fatalf("second compaction: %v", err)
	}
}

func TestTagsRestoreConfig(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 10, WriteOptions{})
	d = mustAppend(t, d, 10, 20)
	if err := d.CreateTag(ctx, "v1", 1); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateTag(ctx, "v1", 2); !errors.Is(err, ErrTagExists) {
		t.Fatal(err)
	}
	if err := d.CreateTag(ctx, "nine", 9); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	tv, err := Open(ctx, st, "t", OpenOptions{Tag: "v1"})
	if err != nil || !slices.Equal(ids(t, tv), seq(0, 10)) {
		t.Fatal(err)
	}
	tags, _ := d.ListTags(ctx)
	if len(tags) != 1 || tags[0].Version != 1 {
		t.Fatalf("tags %v", tags)
	}
	r, err := d.Restore(ctx, 1)
	if err != nil || r.Version() != 3 || !slices.Equal(ids(t, r), seq(0, 10)) || operationName(txnOf(t, r)) != "Restore" {
		t.Fatalf("restore: %v", err)
	}
	// Fragment ids never go back.
	r2 := mustAppend(t, r, 100, 101)
	if r2.Fragments()[1].ID != 2 {
		t.Fatalf("id after restore %d", r2.Fragments()[1].ID)
	}
	c, err := r2.UpdateConfig(ctx, map[string]string{ConfigAutoCleanupInterval: "10", "x.y": "z"}, nil)
	if err != nil || c.Config()["x.y"] != "z" || c.mf.m.WriterFeatureFlags != flagTableConfig || c.mf.m.ReaderFeatureFlags != 0 {
		t.Fatalf("config: %v %v", err, c.mf.m)
	}
	c2 := mustAppend(t, c, 5, 6)
	if c2.Config()["x.y"] != "z" || c2.mf.m.WriterFeatureFlags != flagTableConfig {
		t.Fatal("config not carried")
	}
	c3, err := c2.UpdateConfig(ctx, nil, []string{"x.y", ConfigAutoCleanupInterval})
	if err != nil || len(c3.Config()) != 0 || c3.mf.m.WriterFeatureFlags != 0 {
		t.Fatalf("config removal: %v %v", err, c3.Config())
	}
	if _, err := c3.UpdateConfig(ctx, map[string]string{ConfigAutoCleanupOlderThan: "soon"}, nil); err == nil {
		t.Fatal("bad duration accepted")
	}
	if err := c3.DeleteTag(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := c3.DeleteTag(ctx, "v1"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"14d": 14 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "0s": 0, "0d": 0, "15250w": 15250 * 7 * 24 * time.Hour, "106751d": 106751 * 24 * time.Hour} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "x", "d", "1x", "15251w", "106752d", "106751d24h"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	st := newTimedStore()
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st.now = func() time.Time { return clock }
	tick := func() { clock = clock.Add(time.Hour) }
	d := mustCreate(t, st, "t", 0, 10, WriteOptions{})
	tick()
	d = mustAppend(t, d, 10, 20)
	if err := d.CreateTag(ctx, "keep", 2); err != nil {
		t.Fatal(err)
	}
	tick()
	d, _, _ = d.Delete(ctx, "id < 5")
	tick()
	d, _, _ = d.Compact(ctx, CompactOptions{})
	tick()
	// A failed commit's leftovers: a data file and a transaction file.
	leftData, leftTxn := "t/data/leftover.lance", "t/_transactions/9-x.txn"
	_ = st.Put(ctx, leftData, []byte("x"))
	_ = st.Put(ctx, leftTxn, []byte("x"))
	// Manifest timestamps come from the real clock; move "now" far ahead.
	future := time.Now().Add(48 * time.Hour)
	stats, err := CleanupOldVersions(ctx, st, "t", time.Hour, CleanupOptions{Now: func() time.Time { return future }})
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := ListVersions(ctx, st, "t")
	var vs []uint64
	for _, r := range refs {
		vs = append(vs, r.Version)
	}
	if !slices.Equal(vs, []uint64{2, d.Version()}) {
		t.Fatalf("versions left %v (stats %+v)", vs, stats)
	}
	for _, v := range vs {
		dv, err := Open(ctx, st, "t", OpenOptions{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dv.CountRows(ctx); err != nil {
			t.Fatal(err)
		}
		ids(t, dv)
	}
	if stats.VersionsRemoved != 3 || stats.DeletionFilesRemoved != 1 || stats.DataFilesRemoved != 1 || stats.TransactionFilesRemoved < 4 {
		t.Fatalf("stats %+v", stats)
	}
	for _, k := range []string{leftData, leftTxn} {
		if _, err := st.Stat(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("leftover %s kept", k)
		}
	}
	// Everything left is referenced.
	tagged, _ := Open(ctx, st, "t", OpenOptions{Tag: "keep"})
	if !slices.Equal(ids(t, tagged), seq(0, 20)) {
		t.Fatal("tagged version changed")
	}
	// A young leftover survives.
	_ = st.Put(ctx, "t/data/young.lance", []byte("x"))
	if _, err := CleanupOldVersions(ctx, st, "t", time.Hour, CleanupOptions{Now: func() time.Time { return clock }}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "t/data/young.lance"); err != nil {
		t.Fatal("young leftover removed")
	}
}

func TestConflictRules(t *testing.T) {
	frag := func(id uint64) *tablepb.DataFragment { return &tablepb.DataFragment{Id: id} }
	mk := func(op any) *tablepb.Transaction {
		t := &tablepb.Transaction{}
		switch o := op.(type) {
		case *tablepb.Transaction_Append:
			t.Operation = &tablepb.Transaction_Append_{Append: o}
		case *tablepb.Transaction_Delete:
			t.Operation = &tablepb.Transaction_Delete_{Delete: o}
		case *tablepb.Transaction_Overwrite:
			t.Operation = &tablepb.Transaction_Overwrite_{Overwrite: o}
		case *tablepb.Transaction_Rewrite:
			t.Operation = &tablepb.Transaction_Rewrite_{Rewrite: o}
		case *tablepb.Transaction_Restore:
			t.Operation = &tablepb.Transaction_Restore_{Restore: o}
		case *tablepb.Transaction_ReserveFragments:
			t.Operation = &tablepb.Transaction_ReserveFragments_{ReserveFragments: o}
		case *tablepb.Transaction_Update:
			t.Operation = &tablepb.Transaction_Update_{Update: o}
		case *tablepb.Transaction_UpdateConfig:
			t.Operation = &tablepb.Transaction_UpdateConfig_{UpdateConfig: o}
		case *tablepb.Transaction_Merge:
			t.Operation = &tablepb.Transaction_Merge_{Merge: o}
		}
		return t
	}
	val := "v"
	var (
		appendT   = mk(&tablepb.Transaction_Append{Fragments: []*tablepb.DataFragment{frag(0)}})
		del1      = mk(&tablepb.Transaction_Delete{UpdatedFragments: []*tablepb.DataFragment{frag(1)}})
		del2      = mk(&tablepb.Transaction_Delete{DeletedFragmentIds: []uint64{2}})
		rw1       = mk(&tablepb.Transaction_Rewrite{Groups: []*tablepb.Transaction_Rewrite_RewriteGroup{{OldFragments: []*tablepb.DataFragment{frag(1)}}}})
		rw3       = mk(&tablepb.Transaction_Rewrite{Groups: []*tablepb.Transaction_Rewrite_RewriteGroup{{OldFragments: []*tablepb.DataFragment{frag(3)}}}})
		upd2      = mk(&tablepb.Transaction_Update{RemovedFragmentIds: []uint64{2}})
		overwrite = mk(&tablepb.Transaction_Overwrite{})
		owCfg     = mk(&tablepb.Transaction_Overwrite{ConfigUpsertValues: map[string]string{"a": "1"}})
		restore   = mk(&tablepb.Transaction_Restore{Version: 1})
		reserve   = mk(&tablepb.Transaction_ReserveFragments{NumFragments: 2})
		cfgA      = mk(&tablepb.Transaction_UpdateConfig{ConfigUpdates: &tablepb.Transaction_UpdateMap{UpdateEntries: []*tablepb.Transaction_UpdateMapEntry{{Key: "a", Value: &val}}}})
		cfgB      = mk(&tablepb.Transaction_UpdateConfig{ConfigUpdates: &tablepb.Transaction_UpdateMap{UpdateEntries: []*tablepb.Transaction_UpdateMapEntry{{Key: "b"}}}})
		merge     = mk(&tablepb.Transaction_Merge{})
	)
	cases := []struct {
		name        string
		mine, other *tablepb.Transaction
		want        verdict
	}{
		{"append/append", appendT, appendT, compatible},
		{"append/delete", appendT, del1, compatible},
		{"append/rewrite", appendT, rw1, compatible},
		{"append/overwrite", appendT, overwrite, incompatible},
		{"append/restore", appendT, restore, incompatible},
		{"append/reserve", appendT, reserve, compatible},
		{"append/config", appendT, cfgA, compatible},
		{"delete/append", del1, appendT, compatible},
		{"delete/other fragment", del1, del2, compatible},
		{"delete/same fragment", del1, del1, retryable},
		{"delete/rewrite same", del1, rw1, retryable},
		{"delete/rewrite other", del1, rw3, compatible},
		{"delete/update other", del1, upd2, compatible},
		{"update/delete same", upd2, del2, retryable},
		{"delete/merge", del1, merge, retryable},
		{"delete/overwrite", del1, overwrite, incompatible},
		{"rewrite/append", rw1, appendT, compatible},
		{"rewrite/reserve", rw1, reserve, compatible},
		{"rewrite/delete same", rw1, del1, retryable},
		{"rewrite/delete other", rw1, del2, compatible},
		{"rewrite/rewrite other", rw1, rw3, compatible},
		{"rewrite/restore", rw1, restore, incompatible},
		{"overwrite/append", overwrite, appendT, compatible},
		{"overwrite/overwrite", overwrite, overwrite, compatible},
		{"overwrite cfg/config same key", owCfg, cfgA, incompatible},
		{"config/config same key", cfgA, cfgA, incompatible},
		{"config/config other key", cfgA, cfgB, compatible},
		{"config/delete", cfgA, del1, compatible},
		{"restore/anything", restore, del1, compatible},
		{"reserve/overwrite", reserve, overwrite, compatible},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := checkConflict(c.mine, c.other); got != c.want {
				t.Fatalf("got %v (%s), want %v", got, why, c.want)
			}
		})
	}
}

func TestCommitConflicts(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t", 0, 100, WriteOptions{MaxRowsPerFile: 50})
	// An overwrite wins over a stale append.
	if _, err := Overwrite(ctx, st, "t", wSchema, Batches(idBatch(500, 510)), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := d.Append(ctx, Batches(idBatch(0, 1)), WriteOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Version != 2 || ce.Operation != "Overwrite" || ce.Retryable {
		t.Fatalf("stale append after overwrite: %v", err)
	}
	// A stale delete is re-evaluated on the latest version.
	d, _ = Open(ctx, st, "t", OpenOptions{})
	d2, _, err := d.Delete(ctx, "id = 500")
	if err != nil {
		t.Fatal(err)
	}
	d3, _, err := d.Delete(ctx, "id = 501")
	if err != nil {
		t.Fatal(err)
	}
	if d3.Version() != d2.Version()+1 || !slices.Equal(ids(t, d3), seq(502, 510)) {
		t.Fatalf("rebased delete: version %d ids %v", d3.Version(), ids(t, d3))
	}
	// A stale compaction loses to a delete of the same fragment.
	a := mustAppend(t, d3, 600, 601)
	_, _, err = a.Delete(ctx, "id = 600")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = a.Compact(ctx, CompactOptions{})
	if !errors.As(err, &ce) || !ce.Retryable {
		t.Fatalf("compaction after delete: %v", err)
	}
	// An Update removing a fragment a concurrent delete touched.
	l, _ := a.Latest(ctx)
	_, err = a.Update(ctx, UpdateRequest{RemoveFragments: []uint64{a.Fragments()[1].ID}}, WriteOptions{})
	if !errors.As(err, &ce) || !ce.Retryable {
		t.Fatalf("update after delete: %v", err)
	}
	u, err := l.Update(ctx, UpdateRequest{RemoveFragments: []uint64{l.Fragments()[0].ID}, New: Batches(idBatch(700, 702))}, WriteOptions{})
	if err != nil || !slices.Equal(ids(t, u), seq(700, 702)) || operationName(txnOf(t, u)) != "Update" {
		t.Fatalf("update: %v", err)
	}
}
