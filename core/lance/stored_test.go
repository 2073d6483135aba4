package lance

import (
	"context"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// removeDataset deletes every object of the dataset at root.
func removeDataset(t *testing.T, st store.Store, root string) {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, store.ListOptions{Prefix: root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
}

// A handle on a version of a dataset that was deleted and written again
// (its version of the same number is another manifest) sees it: Stored,
// IsLatest and SameVersion say no, ManifestID differs, and Latest opens
// the new version, in a latest scope too; a version a cleanup removed is
// not stored.
func TestStoredFollowsRewrites(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	old := mustCreate(t, st, "t.lance", 0, 10, WriteOptions{})
	if ok, err := old.Stored(ctx); err != nil || !ok {
		t.Fatalf("Stored of the version just written: %v, %v", ok, err)
	}
	again, err := Open(ctx, st, "t.lance", OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !old.SameVersion(again) || old.ManifestID() != again.ManifestID() {
		t.Fatalf("the same version opened twice: SameVersion %v, ids %s %s", old.SameVersion(again), old.ManifestID(), again.ManifestID())
	}

	removeDataset(t, st, "t.lance")
	if ok, err := old.Stored(ctx); err != nil || ok {
		t.Fatalf("Stored of a deleted dataset's version: %v, %v", ok, err)
	}
	// Written again: the same rows, the same version number and size of
	// manifest (what a Stat sees), but other data files. The manifest's
	// size varies by a byte with its timestamp's varint: write until it
	// is the old one's.
	var cur *Dataset
	for i := 0; ; i++ {
		removeDataset(t, st, "t.lance")
		mustCreate(t, st, "t.lance", 0, 10, WriteOptions{})
		var err error
		if cur, err = Open(ctx, st, "t.lance", OpenOptions{}); err != nil {
			t.Fatal(err)
		}
		if cur.mf.size == old.mf.size {
			break
		}
		if i == 100 {
			t.Fatalf("100 datasets written again, none with a manifest of %d bytes", old.mf.size)
		}
	}
	if cur.Version() != old.Version() || cur.ManifestKey() != old.ManifestKey() {
		t.Fatalf("the new dataset is at version %d (%s), want %d (%s)", cur.Version(), cur.ManifestKey(), old.Version(), old.ManifestKey())
	}
	if ok, err := old.Stored(ctx); err != nil || ok {
		t.Fatalf("Stored of a version written again: %v, %v", ok, err)
	}
	if old.SameVersion(cur) || old.ManifestID() == cur.ManifestID() {
		t.Fatalf("a version written again is the old one: SameVersion %v, ids %s %s", old.SameVersion(cur), old.ManifestID(), cur.ManifestID())
	}
	for _, scoped := range []bool{false, true} {
		c := ctx
		if scoped {
			c = WithLatestScope(ctx, ScopeOptions{})
		}
		if same, err := old.IsLatest(c); err != nil || same {
			t.Fatalf("scope %v: IsLatest of the old dataset's version: %v, %v", scoped, same, err)
		}
		nd, err := old.Latest(c)
		if err != nil {
			t.Fatal(err)
		}
		if !nd.SameVersion(cur) {
			t.Fatalf("scope %v: Latest of the old dataset's version gave %s, want the new %s", scoped, nd.ManifestID(), cur.ManifestID())
		}
	}

	// A cleanup removes version 1 once a newer one exists.
	next, err := cur.Append(ctx, Batches(idBatch(10, 20)), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CleanupOldVersions(ctx, st, "t.lance", 0, CleanupOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := cur.Stored(ctx); err != nil || ok {
		t.Fatalf("Stored of a version a cleanup removed: %v, %v", ok, err)
	}
	if ok, err := next.Stored(ctx); err != nil || !ok {
		t.Fatalf("Stored of the latest version: %v, %v", ok, err)
	}
}

// A dataset written again at a lower version than a handle holds: Latest
// opens the new dataset's latest (lower) version, in a scope too.
func TestLatestAfterRewriteAtLowerVersion(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := mustCreate(t, st, "t.lance", 0, 10, WriteOptions{})
	for i := int64(1); i <= 3; i++ {
		var err error
		if d, err = d.Append(ctx, Batches(idBatch(i*10, i*10+10)), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removeDataset(t, st, "t.lance")
	fresh := mustCreate(t, st, "t.lance", 100, 105, WriteOptions{})
	for _, c := range []context.Context{ctx, WithLatestScope(ctx, ScopeOptions{})} {
		nd, err := d.Latest(c)
		if err != nil {
			t.Fatal(err)
		}
		if !nd.SameVersion(fresh) {
			t.Fatalf("Latest of version %d after the dataset was written again at version 1: version %d", d.Version(), nd.Version())
		}
	}
}

// Forget drops a removed version's data files from the file cache, except
// those the version kept names; a file opened under a name a manifest
// records with another size is opened again.
func TestFileCacheForget(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	files := NewFileCache(16)
	d := mustCreate(t, st, "t.lance", 0, 10, WriteOptions{})
	d, err := Open(ctx, st, "t.lance", OpenOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	next, err := d.Append(ctx, Batches(idBatch(10, 20)), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.OpenFiles(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := files.Len(); n != 2 {
		t.Fatalf("%d files cached, want 2", n)
	}
	files.Forget(d, next) // d's only file is next's too
	if n := files.Len(); n != 2 {
		t.Fatalf("Forget dropped a file the kept version names: %d left", n)
	}
	files.Forget(next, nil)
	if n := files.Len(); n != 0 {
		t.Fatalf("Forget left %d files", n)
	}

	// The size check: the cache holds a file, and a manifest records
	// another size for that name.
	key := next.k.data(next.frags[0].pb.GetFiles()[0].GetPath())
	size := next.Fragments()[0].Files[0].Size
	if _, err := files.open(ctx, st, key, size); err != nil {
		t.Fatal(err)
	}
	st.ResetCounters()
	if _, err := files.open(ctx, st, key, size); err != nil || st.Counters().Reads != 0 {
		t.Fatalf("a cached file read again (%d reads, %v)", st.Counters().Reads, err)
	}
	if _, err := files.open(ctx, st, key, size+1); err == nil || st.Counters().Reads == 0 {
		t.Fatalf("a file of another size than cached was not opened again (%d reads, %v)", st.Counters().Reads, err)
	}
}
