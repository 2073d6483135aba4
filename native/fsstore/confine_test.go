package fsstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

// TestSymlinksStayInside: reads of a confined store never follow a
// symbolic link out of its folder (kv0 serve hands it keys from requests),
// while links that stay inside still work.
func TestSymlinksStayInside(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("do not serve"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "d", "_versions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "d", "_versions", "1.manifest"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "inside"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"file-out": secret, "dir-out": filepath.Join(outside, "d"), "rel-out": "../" + filepath.Base(outside) + "/secret", "file-in": "inside"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := fsstore.OpenConfined(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"file-out", "rel-out", "dir-out/_versions/1.manifest"} {
		p := make([]byte, 4)
		if err := st.ReadAt(ctx, key, p, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ReadAt(%s) = %v (%q), want not found", key, err, p)
		}
		if _, err := st.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Stat(%s) = %v, want not found", key, err)
		}
	}
	objs, err := st.List(ctx, store.ListOptions{Prefix: "dir-out/_versions/"})
	if err != nil || len(objs) != 0 {
		t.Errorf("List(dir-out/_versions/) = %v, %v; want nothing", objs, err)
	}
	p := make([]byte, 4)
	if err := st.ReadAt(ctx, "file-in", p, 0); err != nil || string(p) != "fine" {
		t.Errorf("ReadAt(file-in) = %v, %q", err, p)
	}
}
