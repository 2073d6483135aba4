package fsstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/native/fsstore"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := fsstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{})
}

func TestNoEscape(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	s, err := fsstore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"../outside", "a/../../outside", "/etc/passwd"} {
		if err := s.Put(ctx, k, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); !os.IsNotExist(err) {
		t.Fatalf("a file escaped the root: %v", err)
	}
}

func TestOpenExisting(t *testing.T) {
	if _, err := fsstore.OpenExisting(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenExisting of a missing folder: %v, want ErrNotFound", err)
	}
}

func TestListSkipsTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	s, _ := fsstore.Open(dir)
	ctx := context.Background()
	if err := s.Put(ctx, "v/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v", ".kv0-tmp-abc"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A temporary file older than a day is a crashed writer's: listing
	// removes it.
	stale := filepath.Join(dir, "v", ".kv0-tmp-old")
	if err := os.WriteFile(stale, []byte("left by a crash"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, store.ListOptions{Prefix: "v/"})
	if err != nil || len(got) != 1 || got[0].Key != "v/a" {
		t.Fatalf("List = %v, %v; want only v/a", got, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temporary file after List: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "v", ".kv0-tmp-abc")); err != nil {
		t.Fatalf("fresh temporary file after List: %v", err)
	}
}

func TestPutNoSyncThenSync(t *testing.T) {
	dir := t.TempDir()
	s, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var sy store.Syncer = s
	keys := []string{"a/b/1", "a/b/2", "c/3"}
	for i, k := range keys {
		if err := sy.PutNoSync(ctx, k, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Visible at once, before Sync.
	for i, k := range keys {
		p := make([]byte, 1)
		if err := s.ReadAt(ctx, k, p, 0); err != nil || p[0] != byte(i) {
			t.Fatalf("%s: %v %v", k, p, err)
		}
	}
	if err := sy.Sync(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	if err := sy.Sync(ctx); err != nil {
		t.Fatalf("Sync of no key: %v", err)
	}
	if err := sy.Sync(ctx, "a/b/1", "a/missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sync of a missing key: %v, want ErrNotFound", err)
	}
	if err := sy.Sync(ctx, "../x"); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Sync of an invalid key: %v, want ErrInvalidKey", err)
	}
	// No temporary file is left behind.
	got, err := s.List(ctx, store.ListOptions{})
	if err != nil || len(got) != 3 {
		t.Fatalf("List = %v, %v", got, err)
	}
	for _, d := range []string{"a/b", "c"} {
		ents, _ := os.ReadDir(filepath.Join(dir, d))
		for _, e := range ents {
			if e.Name()[0] == '.' {
				t.Fatalf("left %s/%s", d, e.Name())
			}
		}
	}
}

func TestOverwrite(t *testing.T) {
	dir := t.TempDir()
	s, _ := fsstore.Open(dir)
	ctx := context.Background()
	var o store.Overwriter = s
	// Missing: created.
	if err := o.Overwrite(ctx, "v/h", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "v", "h"))
	if err != nil {
		t.Fatal(err)
	}
	// Longer, then shorter: same file, exact content.
	for _, want := range []string{"1234567", "12"} {
		if err := o.Overwrite(ctx, "v/h", []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadAll(ctx, s, "v/h")
		if err != nil || string(got) != want {
			t.Fatalf("after Overwrite(%q): %q, %v", want, got, err)
		}
		fi2, err := os.Stat(filepath.Join(dir, "v", "h"))
		if err != nil || !os.SameFile(fi, fi2) {
			t.Fatalf("Overwrite replaced the file instead of writing in place: %v", err)
		}
	}
	if err := o.Overwrite(ctx, "../h", nil); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Overwrite of an invalid key: %v", err)
	}
}

func TestPutPartsNoSync(t *testing.T) {
	s, _ := fsstore.Open(t.TempDir())
	ctx := context.Background()
	var pp store.PartsPutter = s
	if err := pp.PutPartsNoSync(ctx, "d/f", [][]byte{[]byte("ab"), nil, []byte("cde")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx, "d/f"); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadAll(ctx, s, "d/f")
	if err != nil || string(got) != "abcde" {
		t.Fatalf("%q, %v", got, err)
	}
	// The generic helper joins the parts on stores without the interface.
	m := store.NewMemory()
	if err := store.PutPartsNoSync(ctx, m, "k", [][]byte{[]byte("x"), []byte("yz")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.ReadAll(ctx, m, "k"); string(got) != "xyz" {
		t.Fatalf("memory: %q", got)
	}
}

// A streamed object is a temporary file until Commit renames it; Abort
// removes it.
func TestCreateNoSync(t *testing.T) {
	root := t.TempDir()
	s, _ := fsstore.Open(root)
	ctx := context.Background()
	var st store.Streamer = s
	w, err := st.CreateNoSync(ctx, "d/f")
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.CreateNoSync(ctx, "d/g")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ab", "", "cde"} {
		if err := w.Append([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Append([]byte("gone")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "d")); len(ents) != 2 {
		t.Fatalf("while writing: %v, want two temporary files", ents)
	}
	a.Abort()
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte("late")); err == nil {
		t.Fatal("Append after Commit succeeded")
	}
	ents, _ := os.ReadDir(filepath.Join(root, "d"))
	if len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("after commit and abort: %v, want f alone", ents)
	}
	if got, err := store.ReadAll(ctx, s, "d/f"); err != nil || string(got) != "abcde" {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := st.CreateNoSync(ctx, "../escape"); err == nil {
		t.Fatal("a key outside the root was accepted")
	}
}

func TestPutIfAbsentAfterSync(t *testing.T) {
	s, _ := fsstore.Open(t.TempDir())
	ctx := context.Background()
	if err := s.PutNoSync(ctx, "d/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsentAfterSync(ctx, "v/1", []byte("m"), "d/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsentAfterSync(ctx, "v/1", []byte("n"), "d/a"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	// A key that cannot be synced stops the create: nothing is linked.
	if err := s.PutIfAbsentAfterSync(ctx, "v/2", []byte("m"), "d/missing"); err == nil {
		t.Fatal("create after a failed sync succeeded")
	}
	if _, err := s.Stat(ctx, "v/2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("v/2 exists after a failed sync: %v", err)
	}
	got, err := s.List(ctx, store.ListOptions{Prefix: "v/"})
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %v, %v (temporary files left?)", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root(), "v"))
	if len(ents) != 1 {
		t.Fatalf("%d entries in v/, want 1 (no temporary file left)", len(ents))
	}
}
