package fsstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
	got, err := s.List(ctx, store.ListOptions{Prefix: "v/"})
	if err != nil || len(got) != 1 || got[0].Key != "v/a" {
		t.Fatalf("List = %v, %v; want only v/a", got, err)
	}
}
